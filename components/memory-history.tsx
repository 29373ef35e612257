import type { MemoryHistoryEntry } from "@/lib/index/memories";
import { formatTime } from "@/lib/format";

const VERB: Record<MemoryHistoryEntry["action"], string> = { "memory.create": "created", "memory.update": "edited", "memory.move": "moved", "memory.delete": "deleted (to the trash)", "memory.restore": "restored from the trash", "memory.purge": "purged from the trash" };

function describe(e: MemoryHistoryEntry): string {
  const parts: string[] = [];
  if (e.movedFrom) parts.push(`from ${e.movedFrom} to ${e.path}`);
  if (e.fields.length > 0) parts.push(`changed ${e.fields.join(", ")}`);
  return parts.join("; ");
}

/** One diff line, coloured by its first character. */
function DiffLine({ line }: { line: string }) {
  const tone = line.startsWith("+") ? "bg-emerald-50 text-emerald-900" : line.startsWith("-") ? "bg-red-50 text-red-900" : line.startsWith("@@") ? "text-sky-700" : "text-slate-600";
  return <span className={`block whitespace-pre-wrap break-words ${tone}`}>{line || " "}</span>;
}

/** Who changed the memory, when and what, from the audit log; and the body diff of the last edit that changed the body. */
export function MemoryHistory({ entries }: { entries: MemoryHistoryEntry[] }) {
  const lastDiff = entries.find((e) => e.fields.includes("body"));
  return (
    <section className="card space-y-3" aria-labelledby="memory-history-heading" data-testid="memory-history">
      <h3 id="memory-history-heading" className="font-semibold">
        History
      </h3>
      {entries.length === 0 ? (
        <p className="text-sm text-slate-600">No recorded changes: this memory was written to its folder directly (the audit log starts with the first change through the API or the dashboard).</p>
      ) : (
        <ol className="space-y-1 text-sm">
          {entries.map((e) => (
            <li key={e.id} data-testid="memory-history-entry">
              <span className="font-medium">{VERB[e.action]}</span> by <span className="font-mono text-xs">{e.actor}</span> · {formatTime(e.ts)}
              {describe(e) && <span className="text-slate-600"> · {describe(e)}</span>}
              {Object.entries(e.changed).length > 0 && (
                <ul className="ml-4 list-disc text-xs text-slate-600">
                  {Object.entries(e.changed).map(([field, c]) => (
                    <li key={field}>
                      {field}: {JSON.stringify(c.before) ?? "—"} → {JSON.stringify(c.after) ?? "—"}
                    </li>
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ol>
      )}
      {lastDiff && (
        <div>
          <p className="label">
            Last edit of the text, by {lastDiff.actor} · {formatTime(lastDiff.ts)}
          </p>
          {lastDiff.diff ? (
            <pre tabIndex={0} className="mt-1 max-h-96 overflow-auto rounded bg-slate-50 p-2 font-mono text-xs" data-testid="memory-last-diff">
              {lastDiff.diff.split("\n").map((line, i) => (
                <DiffLine key={i} line={line} />
              ))}
            </pre>
          ) : null}
          {lastDiff.diffTruncated && <p className="text-xs text-amber-800">{lastDiff.diff ? "The diff is cut short: the edit was large." : "The edit was too large to keep a diff of."}</p>}
        </div>
      )}
    </section>
  );
}
