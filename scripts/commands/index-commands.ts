import { reindexStore } from "../../lib/index/reindex";
import { verifyStore } from "../../lib/index/verify";
import { appendAudit } from "../../lib/governance/audit";
import { listStoreNames, storeExists } from "../../lib/db/store-names";
import { progressBar, UsageError, type Command } from "../cli-kit";

const ACTOR = `cli:${process.env.USER ?? "local"}`;

function storesFrom(args: string[], all: boolean): string[] {
  if (all) return listStoreNames();
  if (!args[0]) throw new UsageError("name a store, or pass --all");
  if (!storeExists(args[0])) throw new UsageError(`store ${args[0]} does not exist`);
  return [args[0]];
}

export const indexCommands: Command[] = [
  {
    name: "reindex",
    usage: "reindex <store> | --all",
    summary: "rebuild a store's index from its memory/ folder and source roots (one transaction)",
    run: ({ args, flags, json, out }) => {
      for (const store of storesFrom(args, flags.all === true)) {
        appendAudit({ actor: ACTOR, action: "store.reindex", target: `store:${store}` });
        const bar = progressBar(`reindex ${store}`, !json);
        const r = reindexStore({ store, onProgress: (p) => bar.update(p.done, p.total) });
        bar.done();
        const c = r.counts;
        out(`${store}: scanned ${c.scanned}, added ${c.added}, changed ${c.changed}, unchanged ${c.unchanged}, removed ${c.removed}, skipped ${c.skipped} in ${r.durationMs} ms`, r);
      }
      return 0;
    },
  },
  {
    name: "verify",
    usage: "verify <store> | --all",
    summary: "compare files with the index without writing (exit 1 on any difference)",
    run: ({ args, flags, out }) => {
      let ok = true;
      for (const store of storesFrom(args, flags.all === true)) {
        const v = verifyStore({ store });
        ok &&= v.ok;
        const lines = [
          `${store}: ${v.ok ? "OK" : "PROBLEMS FOUND"} (${v.counts.files} files, ${v.counts.fileDocuments} file documents, ${v.counts.apiDocuments} API documents, ${v.counts.chunks} chunks)`,
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
