import Link from "@/components/link";
import { LedgerSection } from "@/components/ledger-section";
import { FRAMEWORKS } from "@/lib/db/schema/graph";
import { formatTime } from "@/lib/format";
import { graphBackend } from "@/lib/graph/backend";
import { listThoughtsQuerySchema } from "@/lib/graph/thoughts";
import { graphStoreOr404 } from "../../load";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";
import { PoisonFlagBadges } from "@/components/poison-flags";

type Props = { params: Promise<{ store: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

const score = (x: number | null) => (x === null ? "—" : x.toFixed(2));

export default async function ThoughtsPage({ params, searchParams }: Props) {
  await requireUser();
  const store = await graphStoreOr404((await params).store);
  const raw = filledParams(await searchParams);
  const page = Math.max(1, Number(raw.page ?? 1) || 1);
  const parsed = listThoughtsQuerySchema.safeParse({ q: raw.q, framework: raw.framework, chain_id: raw.chain_id, limit: 50, offset: (page - 1) * 50 });
  const result = parsed.success ? await graphBackend().listThoughts({ store, filter: parsed.data, budget: false }) : null;
  const { chains } = await graphBackend().listChains({ store, limit: 30, offset: 0 });
  const base = `/graph/${encodeURIComponent(store)}`;
  const pageLink = (p: number) => `${base}/thoughts?${new URLSearchParams({ ...raw, page: String(p) }).toString()}`;
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={base} className="text-sm underline">
          ← Graph · {store}
        </Link>
        <h1 className="text-2xl font-semibold">Thoughts · {store}</h1>
      </div>
      <div className="grid gap-4 lg:grid-cols-[1fr_16rem]">
        <LedgerSection id="thoughts-heading" title="Thoughts">
          <form className="grid gap-2 sm:grid-cols-5" aria-label="Thought filters">
            <input className="input sm:col-span-2" name="q" defaultValue={raw.q} placeholder="words in the thought" aria-label="Search thoughts" />
            <select className="input" name="framework" defaultValue={raw.framework ?? ""} aria-label="Framework">
              <option value="">any framework</option>
              {FRAMEWORKS.map((f) => (
                <option key={f}>{f}</option>
              ))}
            </select>
            <input className="input" name="chain_id" defaultValue={raw.chain_id} placeholder="chain id" aria-label="Chain" />
            <button className="btn justify-center">Filter</button>
          </form>
          {!result ? (
            <p role="alert" className="text-sm text-red-600">
              Those filters are not valid.
            </p>
          ) : result.thoughts.length === 0 ? (
            <p className="text-sm text-slate-600">No thoughts match.</p>
          ) : (
            <table tabIndex={0} className="data" data-testid="thoughts-table">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Thought</th>
                  <th>Framework</th>
                  <th>Chain</th>
                  <th>Novelty</th>
                  <th>Utility</th>
                </tr>
              </thead>
              <tbody>
                {result.thoughts.map((t) => (
                  <tr key={t.id}>
                    <td className="whitespace-nowrap text-slate-600">{formatTime(t.timestamp)}</td>
                    <td>
                      <Link href={`${base}/thoughts/${t.id}`} className="underline">
                        {t.content.length > 120 ? `${t.content.slice(0, 119)}…` : t.content}
                      </Link>{" "}
                      <PoisonFlagBadges flags={t.flags} />
                    </td>
                    <td>{t.framework}</td>
                    <td className="whitespace-nowrap">{t.chain_id ? `${t.chain_id} #${t.thought_number}` : "—"}</td>
                    <td className="tabular-nums">{t.embedding === "pending" ? "pending" : score(t.novelty)}</td>
                    <td className="tabular-nums">{score(t.utility)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {result && result.total > 50 && (
            <nav aria-label="Pages" className="flex gap-3 text-sm">
              {page > 1 && <Link href={pageLink(page - 1)}>← Newer</Link>}
              <span>
                Page {page} of {Math.ceil(result.total / 50)}
              </span>
              {page * 50 < result.total && <Link href={pageLink(page + 1)}>Older →</Link>}
            </nav>
          )}
        </LedgerSection>
        <LedgerSection id="chains-heading" title="Chains">
          {chains.length === 0 ? (
            <p className="text-sm text-slate-600">No chains yet.</p>
          ) : (
            <ul className="space-y-1 text-sm" data-testid="chains">
              {chains.map((c) => (
                <li key={c.id} className="flex justify-between gap-2">
                  <Link href={`${base}/thoughts?chain_id=${encodeURIComponent(c.id)}`} className="truncate underline">
                    {c.id}
                  </Link>
                  <span className="text-slate-600">{c.thought_count}</span>
                </li>
              ))}
            </ul>
          )}
        </LedgerSection>
      </div>
    </div>
  );
}
