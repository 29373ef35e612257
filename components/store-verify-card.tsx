"use client";

import { useActionState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import type { VerifyReport } from "@/lib/index/verify";

type Action = (prev: ActionResult<VerifyReport> | null, form: FormData) => Promise<ActionResult<VerifyReport>>;

function PathList({ label, paths }: { label: string; paths: string[] }) {
  if (paths.length === 0) return null;
  return (
    <div>
      <p className="font-medium">
        {label} ({paths.length}
        {paths.length === 100 ? "+" : ""})
      </p>
      <ul className="list-disc pl-5 font-mono text-xs">
        {paths.map((p) => (
          <li key={p}>{p}</li>
        ))}
      </ul>
    </div>
  );
}

export function StoreVerifyCard({ store, action }: { store: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  const r = state?.ok ? state.data : undefined;
  return (
    <section className="card space-y-3" aria-labelledby="verify-heading" data-testid="verify-card">
      <div className="flex items-center gap-3">
        <h2 id="verify-heading" className="text-lg font-medium">
          Verify
        </h2>
        <form action={formAction}>
          <input type="hidden" name="store" value={store} />
          <button className="btn-secondary" disabled={pending}>
            {pending ? "Verifying…" : "Run verify"}
          </button>
        </form>
      </div>
      <p className="text-sm text-slate-600">Compares the files on disk with the index without changing anything: hashes, missing files, unindexed files and files that cannot be indexed (with the reason), stale chunking versions, FTS and SQLite integrity (within the query budget).</p>
      {state && !state.ok && (
        <p role="alert" className="text-sm text-red-600">
          {state.error}
        </p>
      )}
      {r && (
        <div className="space-y-2 text-sm" data-testid="verify-result">
          <p role="status" className={r.ok ? "font-medium text-emerald-700" : "font-medium text-amber-700"}>
            {r.ok ? "OK: the index matches the files." : `Problems found (${r.consistent ? "database consistent" : "database INCONSISTENT"}, ${r.in_sync ? "in sync" : "out of sync with files"}).`}
          </p>
          <p>
            {r.counts.files} files · {r.counts.file_documents} file documents · {r.counts.api_documents} API documents · {r.counts.chunks} chunks · {r.counts.memories} memories · {r.counts.skipped} skipped ·
            integrity {r.integrity} · stale chunks {r.stale_chunks} · FTS missing {r.fts_missing}/extra {r.fts_extra} · {r.duration_ms} ms
          </p>
          <PathList label="Hash mismatches" paths={r.hash_mismatches} />
          <PathList label="Rows for missing files" paths={r.missing_files} />
          <PathList label="Files not indexed" paths={r.not_indexed} />
          <PathList label="Memories without a document" paths={r.memories_without_document} />
          {r.unindexable.length > 0 && (
            <div data-testid="verify-unindexable">
              <p className="font-medium">Files that cannot be indexed ({r.unindexable.length})</p>
              <ul className="list-disc pl-5 text-xs">
                {r.unindexable.map((u) => (
                  <li key={u.path}>
                    <span className="font-mono">{u.path}</span>: {u.reason}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
    </section>
  );
}
