import fs from "node:fs";
import { actorOf } from "../../lib/auth/actor";
import { backupDataDir, exportStoreBundle, importStoreBundle, restoreDataDir, type RestoreSummary } from "../../lib/backup/backup";
import { exportLedgerSnapshot } from "../../lib/backup/ledger-export";
import { getEmbedder } from "../../lib/embed/model";
import { getStoreStatus } from "../../lib/embed/status";
import { governance } from "../../lib/backend/governance";
import { getStoreStatusPgByName } from "../../lib/metrics/engines/pg";
import { stores as storesBackend } from "../../lib/stores/backend";
import { embeddingsBackend } from "../../lib/stores/embeddings-backend";
import { openStore } from "../../lib/stores/stores";
import { listStoreNames } from "../../lib/db/store-names";
import { PRIVATE_FILE_MODE } from "../../lib/private-fs";
import { flagString, progressBar, refuseWithDatabaseUrl, UsageError, type Command } from "../cli-kit";
import { ledgerCommands } from "./ledger-commands";
import { storesOnPostgres } from "../../lib/stores/on-postgres";

const PG_BACKUP_HINT =
  "with DATABASE_URL the ledger and the stores are in PostgreSQL, which this command does not copy: back up the database with pg_dump (pg_dump --format=custom --file=dualmind.dump \"$DATABASE_URL\") and restore with pg_restore; see docs/postgresql.md, Scaling out";

const BUNDLE_ON_PG =
  "store bundles are a SQLite store's index.db snapshot with its memory files; with DATABASE_URL the stores are in PostgreSQL: move a store's memories with `dualmind memories export --store S --out DIR` and `dualmind memories import --store S --from DIR` (a bundle's memory/ folder imports the same way, into a store made with `dualmind stores create S`), or the whole database with pg_dump";

const ACTOR = actorOf("cli");

/** Write JSON to --out FILE, or to stdout when no file is named. */
function writeJsonOutput(value: unknown, file: string | undefined, out: (human: string, data?: unknown) => void, summary: string, data: unknown): void {
  const text = JSON.stringify(value, null, 2) + "\n";
  if (!file) {
    process.stdout.write(text);
    return;
  }
  // Snapshots hold the ledger: readable by their owner only, like DATA_DIR.
  fs.writeFileSync(file, text, { mode: PRIVATE_FILE_MODE });
  out(summary, data);
}

/** The restore summary a person reads: counts by kind per store and for the ledger, then what was not restored. */
function describeRestore(r: RestoreSummary): string {
  const counts = (c: Record<string, number | null>) =>
    Object.entries(c)
      .filter(([, n]) => n !== null)
      .map(([k, n]) => `${n} ${k}`)
      .join(", ");
  const lines = [`restored ${r.stores.length} store(s):`, ...r.stores.map((s) => `  ${s}: ${counts(r.restored.stores[s])}`), `  ledger: ${counts(r.restored.ledger)}`];
  if (r.notRestored.length === 0) lines.push("nothing was left out");
  else lines.push("not restored:", ...r.notRestored.map((n) => `  ${n.store ?? "ledger"}: ${n.count} ${n.kind} — ${n.reason}`));
  return lines.join("\n");
}

export const agentsCommands: Command[] = [
  {
    name: "mcp",
    usage: "mcp [--store S] [--token dm_...] [--agent ID]",
    summary: "serve MCP over stdio (stdout is protocol only); --store limits it to one store",
    run: async ({ flags }) => {
      // The MCP server (its SDK and every tool) loads only for this command.
      const { runMcpStdio } = await import("../mcp-stdio");
      await runMcpStdio({ store: flagString(flags, "store"), token: flagString(flags, "token") ?? process.env.DUALMIND_TOKEN, agentId: flagString(flags, "agent") });
      return 0;
    },
  },
  {
    name: "backup",
    usage: "backup <dir>",
    summary: "online, consistent backup of every database and memory file in DATA_DIR (safe while serving); with DATABASE_URL refused: back up PostgreSQL with pg_dump",
    run: async ({ args, json, out }) => {
      if (storesOnPostgres()) throw new UsageError(PG_BACKUP_HINT);
      if (!args[0]) throw new UsageError("name an empty directory for the backup");
      const bar = progressBar("backup", !json);
      const manifest = await backupDataDir({ outDir: args[0], actor: ACTOR, onProgress: (p) => bar.update(p.done, p.total) });
      bar.done();
      out(`backed up governance.db and ${manifest.stores.length} store(s) to ${args[0]}`, manifest);
    },
  },
  {
    name: "restore",
    usage: "restore <dir> [--keep-stale-sources]",
    summary:
      "restore a backup into an empty DATA_DIR (stores are reindexed from their files) and count what was restored by kind; refused (nothing written) when the backup holds source documents DUALMIND_SOURCE_ROOTS cannot read again, " +
      "unless --keep-stale-sources keeps them as backed up (not re-read); with DATABASE_URL refused: restore PostgreSQL with pg_restore",
    run: ({ args, flags, out }) => {
      if (storesOnPostgres()) throw new UsageError(PG_BACKUP_HINT);
      if (!args[0]) throw new UsageError("name the backup directory");
      const r = restoreDataDir({ backupDir: args[0], keepStaleSources: flags["keep-stale-sources"] === true });
      out(describeRestore(r), r);
    },
  },
  // The issue's `export sessions` is the ledger's `dialectic export` under the export family's name.
  { ...ledgerCommands.find((c) => c.name === "dialectic export")!, name: "export sessions", usage: "export sessions [--session ID] [--out FILE]" },
  {
    name: "export ledger",
    usage: "export ledger [--out FILE]",
    summary: "every task with its runs, validations, overrides and verdict as JSON",
    run: async ({ flags, out }) => {
      const snapshot = await exportLedgerSnapshot();
      const file = flagString(flags, "out");
      writeJsonOutput(snapshot, file, out, `wrote ${snapshot.tasks.length} task(s) to ${file}`, { file, tasks: snapshot.tasks.length });
    },
  },
  {
    name: "export bundle",
    usage: "export bundle <store> <dir>",
    summary: "a store bundle: index.db snapshot + memory files + embedding fingerprint (SQLite only; with DATABASE_URL use memories export)",
    run: async ({ args, out }) => {
      refuseWithDatabaseUrl(BUNDLE_ON_PG);
      if (!args[0] || !args[1]) throw new UsageError("name the store and an empty output directory");
      const m = await exportStoreBundle({ handle: openStore({ store: args[0] }), outDir: args[1] });
      out(`exported store ${m.store} (${m.memoryFiles} memory files, ${m.bytes} bytes index) to ${args[1]}`, m);
    },
  },
  {
    name: "import bundle",
    usage: "import bundle <dir> [--as NAME] [--reembed]",
    summary: "import a store bundle as a new store, keeping its vectors or re-embedding (SQLite only; with DATABASE_URL use memories import)",
    run: async ({ args, flags, out }) => {
      // Refused before anything is copied into DATA_DIR.
      refuseWithDatabaseUrl(BUNDLE_ON_PG);
      if (!args[0]) throw new UsageError("name the bundle directory");
      const r = await importStoreBundle({ bundleDir: args[0], as: flagString(flags, "as"), reembed: flags.reembed === true, actor: ACTOR });
      const vectors = r.reembed ? `${r.reembed.toEmbed} item(s) queued for re-embedding` : r.fingerprintMatches === false ? "vectors kept (model differs: the store reports drift until a re-embed)" : "vectors kept";
      out(`imported store ${r.store}: ${r.memoryFiles} memory files; ${vectors}`, r);
    },
  },
  {
    name: "reembed",
    usage: "reembed <store> [--only-stale] [--wait]",
    summary: "re-embed a store for the configured model (resumable); --wait embeds here with a progress bar",
    run: async ({ args, flags, json, out }) => {
      if (!args[0]) throw new UsageError("name a store");
      const store = args[0];
      // The same start as POST /stores/{store}/reembed (its job and audit row), on this backend.
      const backend = embeddingsBackend();
      const configured = await getEmbedder().fingerprint;
      const started = await backend.startReembed({ store, configured, onlyStale: flags["only-stale"] === true, holdSwitch: false, actor: ACTOR });
      if (!started.started) return out(`${store}: nothing to re-embed (${started.reason}); no job started`, { started: false, reason: started.reason });
      let progress = started.job;
      if (flags.wait === true && progress.status === "running") {
        const bar = progressBar(`reembed ${store}`, !json);
        const stop = new AbortController();
        // Claims are atomic, so this worker can run beside the server's (and, with DATABASE_URL, other replicas').
        const worker = backend.runEmbedWorker({ signal: stop.signal, idleMs: 100 });
        try {
          while (progress.status === "running") {
            await new Promise((r) => setTimeout(r, 250));
            progress = (await backend.getReembedProgress({ store })) ?? progress;
            bar.update(progress.done, progress.total);
          }
        } finally {
          stop.abort();
          await worker;
          bar.done();
        }
      }
      out(`${store}: re-embed ${progress.status === "done" ? "complete" : progress.status === "waiting_switch" ? "waiting for the switch" : "started"} (${progress.done}/${progress.total} done, target ${progress.target_fingerprint_id})`, { started: true, ...progress });
    },
  },
  {
    name: "health",
    usage: "health [<store> | --all]",
    summary: "one line per store: its live status (healthy, degraded, stalled, drifted, provider_down, parked, vectors_unavailable) and why, plus the audit chain; exit 1 unless every store is healthy and the chain is intact",
    run: async ({ args, flags, out }) => {
      // With DATABASE_URL the stores and the ledger the API serves are PostgreSQL's, never DATA_DIR's local ones.
      const onPg = storesOnPostgres();
      const stores = args[0] && flags.all !== true ? [args[0]] : onPg ? await storesBackend().listStoreNames() : listStoreNames();
      const statuses = [];
      for (const store of stores) statuses.push(onPg ? await getStoreStatusPgByName({ store }) : await getStoreStatus({ handle: openStore({ store }) }));
      const audit = await governance().verifyAuditChain({});
      const lines = statuses.map(
        (s) => `${s.store}\t${s.state}\t${s.reason}\tbacklog ${s.backlog.pending}/${s.backlog.watermark}\tparked ${s.backlog.parked}\tdrift ${s.drift.drifted ?? "unknown"} (coverage ${s.drift.coveragePct === null ? "unknown" : `${s.drift.coveragePct.toFixed(1)}%`})${s.action ? `\tfix: ${s.action.label}` : ""}`,
      );
      lines.push(audit.ok ? `audit chain ok (${audit.entries} entries)` : `audit chain BROKEN at entry ${audit.brokenAtId}: ${audit.reason}`);
      out(lines.join("\n"), { stores: statuses, audit });
      return statuses.some((s) => s.state !== "healthy") || !audit.ok ? 1 : 0;
    },
  },
];
