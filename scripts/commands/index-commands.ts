import { actorOf } from "../../lib/auth/actor";
import type { StoreHandle } from "../../lib/db/connection";
import { listStoreNames } from "../../lib/db/store-names";
import { runReindexJob } from "../../lib/index/jobs";
import { verifyStore } from "../../lib/index/verify";
import { openStore } from "../../lib/stores/stores";
import { progressBar, UsageError, type Command } from "../cli-kit";

/** The named store, or every store with --all; each opened once (an unknown store is a 404, exit 2). */
function storesFrom({ args, all, buildIndex }: { args: string[]; all: boolean; buildIndex: boolean }): StoreHandle[] {
  if (all) return listStoreNames().map((store) => openStore({ store, buildIndex }));
  if (!args[0]) throw new UsageError("name a store, or pass --all");
  return [openStore({ store: args[0], buildIndex })];
}

export const indexCommands: Command[] = [
  {
    name: "reindex",
    usage: "reindex <store> | --all",
    summary: "rebuild a store's index from its memory/ folder and source roots (one transaction), as an audited admin job",
    run: async ({ args, flags, json, out }) => {
      let ok = true;
      // The job is the build: no silent rebuild of a never-built index before it.
      for (const handle of storesFrom({ args, all: flags.all === true, buildIndex: false })) {
        const bar = progressBar(`reindex ${handle.store}`, !json);
        // The same job row and audit entry as POST /stores/{store}/reindex, run here to the end.
        const job = await runReindexJob({ handle, actor: actorOf("cli"), reason: "dualmind reindex", onProgress: (p) => bar.update(p.done, p.total) });
        bar.done();
        const c = job.result?.counts;
        if (job.status !== "succeeded" || !job.result || !c) {
          ok = false;
          const k = job.result?.byKind;
          const kinds = k ? `; memories ${k.memories.scanned} scanned (${k.memories.added} added, ${k.memories.changed} changed, ${k.memories.removed} removed), documents ${k.documents.scanned} scanned (${k.documents.added} added, ${k.documents.changed} changed, ${k.documents.removed} removed)` : "";
          out(`${handle.store}: reindex job ${job.id} ${job.status}${job.error ? `: ${job.error}` : ""}${kinds}`, job);
          continue;
        }
        out(`${handle.store}: scanned ${c.scanned}, added ${c.added}, changed ${c.changed}, unchanged ${c.unchanged}, removed ${c.removed}, skipped ${c.skipped} in ${job.result.durationMs} ms (job ${job.id})`, job);
      }
      return ok ? 0 : 1;
    },
  },
  {
    name: "verify",
    usage: "verify <store> | --all",
    summary: "compare files with the index without writing (exit 1 on any difference)",
    run: ({ args, flags, out }) => {
      let ok = true;
      for (const handle of storesFrom({ args, all: flags.all === true, buildIndex: true })) {
        const v = verifyStore({ handle });
        ok &&= v.ok;
        const lines = [
          `${handle.store}: ${v.ok ? "OK" : "PROBLEMS FOUND"} (${v.counts.files} files, ${v.counts.fileDocuments} file documents, ${v.counts.apiDocuments} API documents, ${v.counts.chunks} chunks)`,
          `  integrity ${v.integrity}; FTS missing ${v.ftsMissing}, extra ${v.ftsExtra}; stale chunks ${v.staleChunks}`,
          ...[
            ["hash mismatch", v.hashMismatches],
            ["file missing", v.missingFiles],
            ["not indexed", v.notIndexed],
            ["memory without document", v.memoriesWithoutDocument],
          ].flatMap(([label, paths]) => (paths as string[]).map((p) => `  ${label}: ${p}`)),
        ];
        out(lines.join("\n"), v);
      }
      return ok ? 0 : 1;
    },
  },
];
