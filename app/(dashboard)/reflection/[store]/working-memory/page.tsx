import { requestTime } from "@/app/_server/pages";
import Link from "@/components/link";
import { requireUser } from "@/app/_server/session";
import { LedgerSection } from "@/components/ledger-section";
import { TimeAgo } from "@/components/time-ago";
import { formatBytes, formatQuantity } from "@/lib/format";
import { graphBackend } from "@/lib/graph/backend";
import { workingMemoryMaxKeys } from "@/lib/graph/working-memory";
import { reflectionHref } from "../../_parts/links";
import { reflectionStoreOr404 } from "../../_parts/load";

type Props = { params: Promise<{ store: string }>; searchParams: Promise<{ offset?: string }> };

/** Values longer than this show their start; the whole value is one click away in the details. */
const PREVIEW_CHARS = 160;
/** Keys per page (the page also stops at DUALMIND_LIST_MAX_BYTES). */
const PAGE = 100;

/** A store's working memory: the agents' scratchpad keys, what they hold, who wrote them and when they expire. */
export default async function WorkingMemoryPage({ params, searchParams }: Props) {
  await requireUser();
  const store = await reflectionStoreOr404((await params).store);
  const now = requestTime();
  const offset = Math.max(0, Math.floor(Number((await searchParams).offset ?? 0) || 0));
  const { entries, total, nextOffset } = await graphBackend().listWorkingMemory({ store, query: { limit: PAGE, offset } });
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={reflectionHref.page(store)} className="text-sm underline">
          ← Reflection · {store}
        </Link>
        <h1 className="text-2xl font-semibold">Working memory · {store}</h1>
        <p className="text-sm text-slate-600">
          {formatQuantity(total, "key")} of at most {formatQuantity(workingMemoryMaxKeys(), "key")}
          {total > 0 ? `; showing ${offset + 1}–${offset + entries.length}` : ""}. Agents set these with{" "}
          <code className="text-xs">PUT /api/v1/stores/{store}/working-memory</code>; expired keys are never shown.
        </p>
      </div>
      <LedgerSection id="wm-heading" title="Keys" testId="working-memory">
        {entries.length === 0 ? (
          <p className="text-sm text-slate-600">No keys in this store&apos;s working memory.</p>
        ) : (
          <div className="scroll-x">
            <table tabIndex={0} className="data">
              <thead>
                <tr>
                  <th>Key</th>
                  <th>Value</th>
                  <th>Written</th>
                  <th>Expires</th>
                </tr>
              </thead>
              <tbody>
                {entries.map((e) => {
                  const json = JSON.stringify(e.value, null, 2);
                  return (
                    <tr key={e.key} data-testid={`wm-${e.key}`}>
                      <td className="font-mono text-xs">{e.key}</td>
                      <td className="max-w-md">
                        {json.length <= PREVIEW_CHARS ? (
                          <pre className="whitespace-pre-wrap break-words text-xs">{json}</pre>
                        ) : (
                          <details>
                            <summary className="cursor-pointer text-xs">
                              <code>{json.slice(0, PREVIEW_CHARS)}…</code> ({formatBytes(Buffer.byteLength(json))})
                            </summary>
                            <pre tabIndex={0} className="mt-1 max-h-80 overflow-auto whitespace-pre-wrap break-words text-xs">{json}</pre>
                          </details>
                        )}
                      </td>
                      <td className="text-xs">
                        {e.updated_by} · <TimeAgo ms={e.updated_at} now={now} />
                      </td>
                      <td className="text-xs">{e.expires_at ? <TimeAgo ms={e.expires_at} now={now} /> : "never"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        {nextOffset !== null ? (
          <p className="text-sm text-slate-600" data-testid="wm-more">
            {formatQuantity(total - nextOffset, "more key")} ·{" "}
            <Link href={`${reflectionHref.workingMemory(store)}?offset=${nextOffset}`} className="underline">
              next page
            </Link>
          </p>
        ) : null}
      </LedgerSection>
    </div>
  );
}
