import type { UnindexableFile } from "@/lib/index/files";

/**
 * Files under a store's memory/ folder that cannot be indexed as they are
 * (their name, size, encoding, an unclosed frontmatter, merge-conflict
 * markers), each with the reason: listed where people look, never skipped
 * in silence. Nothing is shown when there are none.
 */
export function UnindexableFiles({ store, files }: { store: string; files: UnindexableFile[] }) {
  if (files.length === 0) return null;
  return (
    <section className="card space-y-2 border-amber-300" aria-labelledby={`unindexable-${store}`} data-testid="unindexable-files">
      <h2 id={`unindexable-${store}`} className="font-semibold text-amber-800">
        {files.length}
        {files.length === 100 ? "+" : ""} file{files.length === 1 ? "" : "s"} in {store}/memory cannot be indexed
      </h2>
      <p className="text-sm text-slate-600">Search does not see these as they are (a version indexed before stays until the file is fixed). The store is not in sync until they are fixed or removed.</p>
      <ul className="space-y-1 text-sm">
        {files.map((f) => (
          <li key={f.path}>
            <span className="break-all font-mono text-xs">{f.path}</span>: {f.reason}
          </li>
        ))}
      </ul>
    </section>
  );
}
