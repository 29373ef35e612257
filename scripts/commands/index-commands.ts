import { actorOf } from "../../lib/auth/actor";
import type { StoreHandle } from "../../lib/db/connection";
import { listStoreNames } from "../../lib/db/store-names";
import { appendAudit } from "../../lib/governance/audit";
import { documentFtsRebuildState } from "../../lib/index/document-fts";
import { ftsRebuildState, restartFtsRebuild, runFtsRebuild } from "../../lib/index/fts-rebuild";
import { searchInputSchema } from "../../lib/index/search";
import { reasonLine } from "../../lib/retrieval";
import { stores } from "../../lib/stores/backend";
import { getSelfRecall, startEvaluation } from "../../lib/eval/self-recall";
import { deletedStoreLeftovers, openStore } from "../../lib/stores/stores";
import { flagString, progressBar, refuseWithDatabaseUrl, UsageError, type Command } from "../cli-kit";
import { flagLines } from "../../lib/poison";

/**
 * search, reindex and verify go through stores(), as GET /stores/{store}/search,
 * POST /stores/{store}/reindex and GET /stores/{store}/verify do: the store's
 * SQLite index.db by default, its PostgreSQL schema with DATABASE_URL (an
 * unknown store is a 404, exit 2, on both). Only `reindex --fts-only` is
 * SQLite's own (FTS5).
 */

/** The named store, or every store of this backend with --all. */
async function storeNamesFrom({ args, all }: { args: string[]; all: boolean }): Promise<string[]> {
  if (all) return stores().listStoreNames();
  if (!args[0]) throw new UsageError("name a store, or pass --all");
  return [args[0]];
}

/** The named store, or every store with --all; each opened once (an unknown store is a 404, exit 2). SQLite only. */
function sqliteStoresFrom({ args, all }: { args: string[]; all: boolean }): StoreHandle[] {
  if (all) return listStoreNames().map((store) => openStore({ store, buildIndex: false }));
  if (!args[0]) throw new UsageError("name a store, or pass --all");
  return [openStore({ store: args[0], buildIndex: false })];
}

const FTS_ONLY_ON_PG =
  "reindex --fts-only rebuilds the FTS5 tables of a SQLite store's index.db; with DATABASE_URL the stores are in PostgreSQL, whose full-text index is a tsvector column it keeps up to date on every write (there is nothing to rebuild on its own): run `dualmind reindex <store>` (or --all) to rebuild a store's documents and chunks from its memories";

/**
 * `reindex --fts-only`: carry a pending full-text rebuild to the end (a
 * tokenizer migration or the whole-document index left one), or start one
 * over both full-text indexes. Audited
 * like the reindex it stands in for; batches commit as they go, so an
 * interrupted run continues where it stopped (here or on the next open).
 */
async function rebuildFullText({ handles, json, out }: { handles: StoreHandle[]; json: boolean; out: (human: string, data?: unknown) => void }): Promise<number> {
  for (const handle of handles) {
    const resumed = ftsRebuildState(handle).pending || documentFtsRebuildState(handle).pending;
    appendAudit({ actor: actorOf("cli"), action: "store.reindex.fts", target: `store:${handle.store}`, reason: "dualmind reindex --fts-only", details: { resumed } });
    if (!resumed) restartFtsRebuild({ handle });
    const bar = progressBar(`full-text ${handle.store}`, !json);
    const started = performance.now();
    const state = await runFtsRebuild({ handle, onProgress: (p) => bar.update(p.done, p.total) });
    bar.done();
    const ms = Math.round(performance.now() - started);
    out(`${handle.store}: full-text index ${resumed ? "rebuild finished" : "rebuilt"}: ${state.total} chunks in ${ms} ms`, { store: handle.store, resumed, chunks: state.total, durationMs: ms });
  }
  return 0;
}

/** A pending tokenizer rebuild is not a fault, but full-text search covers only part of the store until it ends. */
function rebuildNote(handle: StoreHandle): string[] {
  const fts = ftsRebuildState(handle);
  const docs = documentFtsRebuildState(handle);
  return [
    ...(fts.pending ? [`  full-text index rebuilding (tokenizer changed): ${fts.done}/${fts.total} chunks so far; full-text search covers those`] : []),
    ...(docs.pending ? [`  whole-document index filling: ${docs.done}/${docs.total} documents so far; until it is done, documents rank by their chunks alone`] : []),
  ];
}

export const indexCommands: Command[] = [
  {
    name: "search",
    usage: "search <store> <query...> [--mode fts|vector|hybrid] [--group chunk|document] [--core] [--limit N] [--explain]",
    summary: "search a store (the same call as GET /stores/{store}/search): hits, what answered, and why an answer is empty or weak",
    run: async ({ args, flags, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      const parsed = searchInputSchema.safeParse({
        q: args.slice(1).join(" "),
        mode: flagString(flags, "mode"),
        group: flagString(flags, "group"),
        include_core: flags.core === true,
        explain: flags.explain === true,
        limit: flagString(flags, "limit"),
      });
      if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => `${i.path.join(".") || "query"}: ${i.message}`).join("; "));
      const input = parsed.data;
      const r = await stores().search({ store: args[0], input });
      const lines = [
        `mode ${r.effective_mode}${r.effective_mode !== r.mode ? ` (asked ${r.mode})` : ""}, group ${r.group}, ${r.results.length}${r.has_more ? "+" : ""} result(s)${r.fallback ? `; fallback ${r.fallback.reason}: ${r.fallback.message}` : ""}`,
        ...(r.reason ? [`reason: ${reasonLine(r.reason)}`] : []),
        ...r.results.flatMap((h) => [`${h.score.toFixed(4)}\t${h.store}\t${h.path}#${h.chunk_index}${h.matched_chunks ? ` (${h.matched_chunks} chunks)` : ""}\t${h.snippet}`, ...flagLines({ flags: h.flags })]),
        ...(r.explain ? r.explain.stages.map((s) => `stage ${s.stage}: ${s.candidates} candidate(s), ${s.ms} ms: ${s.detail}`) : []),
      ];
      out(lines.join("\n"), r);
      return 0;
    },
  },
  {
    name: "reindex",
    usage: "reindex <store> | --all [--fts-only]",
    summary:
      "rebuild a store's index from its memory/ folder and source roots (with DATABASE_URL: from its memories in PostgreSQL) in one transaction, as the audited admin job of POST /stores/{store}/reindex, run here to the end; " +
      "--fts-only (SQLite only) rebuilds just the full-text indexes (chunks, then whole documents) from the indexed chunks (resumable: finishes a pending rebuild, else starts one)",
    run: async ({ args, flags, json, out }) => {
      if (flags["fts-only"] === true) {
        refuseWithDatabaseUrl(FTS_ONLY_ON_PG);
        return rebuildFullText({ handles: sqliteStoresFrom({ args, all: flags.all === true }), json, out });
      }
      let ok = true;
      for (const store of await storeNamesFrom({ args, all: flags.all === true })) {
        const bar = progressBar(`reindex ${store}`, !json);
        // The same job row and audit entry as POST /stores/{store}/reindex, run here to the end (the job is the build: no silent rebuild of a never-built index before it).
        const job = await stores().runReindex({ store, actor: actorOf("cli"), reason: "dualmind reindex", onProgress: (p) => bar.update(p.done, p.total) });
        bar.done();
        const c = job.result?.counts;
        if (job.status !== "succeeded" || !job.result || !c) {
          ok = false;
          const k = job.result?.by_kind;
          const kinds = k ? `; memories ${k.memories.scanned} scanned (${k.memories.added} added, ${k.memories.changed} changed, ${k.memories.removed} removed), documents ${k.documents.scanned} scanned (${k.documents.added} added, ${k.documents.changed} changed, ${k.documents.removed} removed)` : "";
          out(`${store}: reindex job ${job.id} ${job.status}${job.error ? `: ${job.error}` : ""}${kinds}`, job);
          continue;
        }
        out(`${store}: scanned ${c.scanned}, added ${c.added}, changed ${c.changed}, unchanged ${c.unchanged}, removed ${c.removed}, skipped ${c.skipped} in ${job.result.duration_ms} ms (job ${job.id})`, job);
      }
      return ok ? 0 : 1;
    },
  },
  {
    name: "evaluate",
    usage: "evaluate <store> | --all [--target active|shadow] [--per-kind N] [--seed N]",
    summary:
      "measure a store's self-recall (docs/self-recall.md): probes drawn from its own content asked in each mode, hit@1/hit@10/MRR@10 per kind and mode, kept with the model and settings; " +
      "the audited admin job of POST /stores/{store}/evaluate, run here to the end (exit 1 when it fails); --target shadow measures the model a held re-embed built",
    run: async ({ args, flags, json, out }) => {
      let ok = true;
      const input = {
        target: flagString(flags, "target") as "active" | "shadow" | undefined,
        per_kind: flagString(flags, "per-kind"),
        seed: flagString(flags, "seed"),
      };
      for (const store of await storeNamesFrom({ args, all: flags.all === true })) {
        const bar = progressBar(`evaluate ${store}`, !json);
        const job = await startEvaluation({ store, actor: actorOf("cli"), input: Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)), wait: true, onProgress: (p) => bar.update(p.done, p.total) });
        bar.done();
        if (job.status !== "succeeded") {
          ok = false;
          out(`${store}: evaluation job ${job.id} ${job.status}${job.error ? `: ${job.error}` : ""}`, job);
          continue;
        }
        const report = await getSelfRecall({ store, limit: 1 });
        const run = report.trend.at(-1) && report.latest?.id === job.result?.run_id ? report.latest : null;
        const f = (x: number | null | undefined) => (x === null || x === undefined ? "-" : x.toFixed(3));
        const lines = [`${store}: self-recall (${job.result?.target}) hit@10 ${f(job.result?.hit10)}, MRR@10 ${f(job.result?.mrr10)} (job ${job.id})`];
        for (const [kind, modes] of Object.entries(run?.results.by_kind ?? {}))
          for (const [mode, s] of Object.entries(modes ?? {})) lines.push(`  ${kind.padEnd(9)} ${mode.padEnd(7)} n=${s.probes} hit@1 ${f(s.hit1)} hit@10 ${f(s.hit10)} MRR@10 ${f(s.mrr10)} ±${f(s.noise)}${s.fallbacks ? ` (${s.fallbacks} fell back)` : ""}`);
        out(lines.join("\n"), { job, run });
      }
      return ok ? 0 : 1;
    },
  },
  {
    name: "verify",
    usage: "verify <store> | --all",
    summary: "compare memory files (with DATABASE_URL: the memories table) with the index without writing, as GET /stores/{store}/verify (exit 1 on any difference)",
    run: async ({ args, flags, out }) => {
      let ok = true;
      const backend = stores();
      // On PostgreSQL the memories table is the truth the index is compared with (there are no files).
      const truth = backend.kind === "postgres" ? "memories" : "files";
      for (const store of await storeNamesFrom({ args, all: flags.all === true })) {
        const v = await backend.verifyStore({ store });
        ok &&= v.ok;
        const lines = [
          `${store}: ${v.ok ? "OK" : "PROBLEMS FOUND"} (${v.counts.files} ${truth}, ${v.counts.file_documents} file documents, ${v.counts.api_documents} API documents, ${v.counts.chunks} chunks)`,
          `  integrity ${v.integrity}; FTS missing ${v.fts_missing}, extra ${v.fts_extra}; stale chunks ${v.stale_chunks}`,
          // A pending FTS5 rebuild is SQLite's; PostgreSQL's tsvector is a generated column, never behind.
          ...(backend.kind === "sqlite" ? rebuildNote(openStore({ store })) : []),
          ...[
            ["hash mismatch", v.hash_mismatches],
            [backend.kind === "postgres" ? "memory missing" : "file missing", v.missing_files],
            ["not indexed", v.not_indexed],
            ["memory without document", v.memories_without_document],
          ].flatMap(([label, paths]) => (paths as string[]).map((p) => `  ${label}: ${p}`)),
        ];
        out(lines.join("\n"), v);
      }
      // Folders of deleted stores a failed removal left behind: still on disk, removed at the next start or delete.
      const leftovers = backend.kind === "sqlite" ? deletedStoreLeftovers() : [];
      if (leftovers.length > 0) {
        ok = false;
        out(leftovers.map((f) => `deleted store folder not yet removed: stores/${f}`).join("\n"), { deletedStoreLeftovers: leftovers });
      }
      return ok ? 0 : 1;
    },
  },
];
