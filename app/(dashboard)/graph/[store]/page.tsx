import Link from "@/components/link";
import { GraphRememberBox } from "@/components/graph-remember-box";
import { LedgerSection } from "@/components/ledger-section";
import { ENTITY_TYPES } from "@/lib/db/schema/graph";
import { graphBackend } from "@/lib/graph/backend";
import { listNodesQuerySchema } from "@/lib/graph/nodes";
import { formatTime } from "@/lib/format";
import { rememberAction } from "../actions";
import { graphStoreOr404 } from "../load";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";
import { PoisonFlagBadges } from "@/components/poison-flags";

type Props = { params: Promise<{ store: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

export default async function GraphStorePage({ params, searchParams }: Props) {
  await requireUser();
  const store = await graphStoreOr404((await params).store);
  const raw = filledParams(await searchParams);
  const parsed = listNodesQuerySchema.safeParse({ q: raw.q, entity_type: raw.entity_type, limit: 50 });
  const result = parsed.success ? await graphBackend().listNodes({ store, filter: parsed.data, budget: false }) : null;
  const base = `/graph/${encodeURIComponent(store)}`;
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-baseline gap-3">
        <h1 className="text-2xl font-semibold">Graph · {store}</h1>
        <Link href={`${base}/thoughts`} className="text-sm underline">
          Thoughts and chains
        </Link>
      </div>

      <LedgerSection id="remember-heading" title="Remember">
        <GraphRememberBox store={store} action={rememberAction} />
      </LedgerSection>

      <LedgerSection id="nodes-heading" title="Nodes">
        <form className="grid gap-2 sm:grid-cols-4" aria-label="Node search">
          <input className="input sm:col-span-2" name="q" defaultValue={raw.q} placeholder="name or label" aria-label="Search nodes" />
          <select className="input" name="entity_type" defaultValue={raw.entity_type ?? ""} aria-label="Entity type">
            <option value="">any type</option>
            {ENTITY_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
          <button className="btn justify-center">Search</button>
        </form>
        {!result ? (
          <p role="alert" className="text-sm text-red-600">
            That search is not valid.
          </p>
        ) : result.nodes.length === 0 ? (
          <p className="text-sm text-slate-600">No nodes match.</p>
        ) : (
          <table tabIndex={0} className="data" data-testid="nodes-table">
            <thead>
              <tr>
                <th>Node</th>
                <th>Type</th>
                <th>Tags</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {result.nodes.map((n) => (
                <tr key={n.id}>
                  <td>
                    <Link href={`${base}/nodes/${n.id}`} className="underline">
                      {n.display_name}
                    </Link>{" "}
                    <PoisonFlagBadges flags={n.flags} />
                  </td>
                  <td>{n.entity_type}</td>
                  <td className="text-slate-600">{n.tags.join(", ")}</td>
                  <td className="text-slate-600">{formatTime(n.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {result && result.total > result.nodes.length && <p className="text-xs text-slate-500">Showing {result.nodes.length} of {result.total}; narrow the search to see others.</p>}
      </LedgerSection>
    </div>
  );
}
