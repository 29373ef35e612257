import { actorOf } from "../../lib/auth/actor";
import { getEmbedder } from "../../lib/embed/model";
import { getEmbeddingStatus } from "../../lib/embed/status";
import { rebuildAnnIndexes, rebuildVecIndex } from "../../lib/embed/vector-index";
import { openStore } from "../../lib/stores/stores";
import { stores as storesBackend } from "../../lib/stores/backend";
import { pgLedger, verifyAuditChain, type AuditVerification } from "../../lib/governance/audit";
import { getPg } from "../../lib/db/pg";
import { storeSchemaName } from "../../lib/db/pg-store";
import { formatBytes } from "../../lib/format";
import { getEmbeddingStatusPgByName } from "../../lib/metrics/engines/pg";
import { embeddingsBackend } from "../../lib/stores/embeddings-backend";
import { storesOnPostgres } from "../../lib/stores/on-postgres";
import { flagString, refuseWithDatabaseUrl, UsageError, type Command } from "../cli-kit";

const ACTOR = actorOf("cli");

export const storeCommands: Command[] = [
  {
    name: "stores list",
    usage: "stores list",
    summary: "list stores with row counts and sizes",
    // This backend's stores (PostgreSQL's with DATABASE_URL), like GET /stores; a PostgreSQL store has no index file.
    run: async ({ out }) => {
      const stores = await storesBackend().listStores();
      out(
        stores
          .map((s) => `${s.name}${s.archived ? " (archived)" : ""}\t${s.files ? formatBytes(s.files.index_bytes) : "postgres"}\t${Object.entries(s.counts).map(([t, n]) => `${t}=${n}`).join(" ")}\tvectors:${s.vectors.available ? s.vectors.version : "unavailable"}`)
          .join("\n"),
        { stores },
      );
    },
  },
  {
    name: "stores create",
    usage: "stores create <name> [--description D]",
    summary: "create a store",
    run: async ({ args, flags, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      const store = await storesBackend().createStore({ input: { name: args[0], description: flagString(flags, "description") }, actor: ACTOR });
      out(`created store ${store.name}`, store);
    },
  },
  {
    name: "stores delete",
    usage: "stores delete <name> --confirm <name>",
    summary: "delete a store and everything in it, for good (audited; --confirm repeats the name; core and default stay)",
    run: async ({ args, flags, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      const done = await storesBackend().deleteStore({ name: args[0], actor: ACTOR, confirm: flagString(flags, "confirm") });
      out(`deleted store ${done.deleted}`, done);
    },
  },
  ...(["archive", "unarchive"] as const).map(
    (verb): Command => ({
      name: `stores ${verb}`,
      usage: `stores ${verb} <name>`,
      summary:
        verb === "archive"
          ? "archive a store: reads still work, writes answer store_archived, background work leaves it closed (audited)"
          : "make an archived store writable again (audited)",
      run: async ({ args, out }) => {
        if (!args[0]) throw new UsageError("store name is required");
        const backend = storesBackend();
        const done = await (verb === "archive" ? backend.archiveStore : backend.unarchiveStore)({ name: args[0], actor: ACTOR });
        out(`${verb}d store ${done.store}`, done);
      },
    }),
  ),
  {
    name: "embeddings status",
    usage: "embeddings status <store>",
    summary: "models, backlog, drift, coverage and re-embed progress of a store",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      const onPg = storesOnPostgres();
      const s = onPg ? await getEmbeddingStatusPgByName({ store: args[0] }) : await getEmbeddingStatus({ handle: openStore({ store: args[0] }) });
      const d = s.drift;
      out(
        [
          `configured: ${s.configured ? `${s.configured.provider}:${s.configured.model} (${s.configured.id})` : `unavailable: ${s.provider_error}`}`,
          `active:     ${s.active ? `${s.active.provider}:${s.active.model} (${s.active.id})` : "none yet"}`,
          `backlog:    ${s.backlog.pending} pending, ${s.backlog.parked} parked, watermark ${s.backlog.watermark}${s.degraded ? " — DEGRADED" : ""}`,
          `drift:      ${d ? `${d.drifted} drifted (${d.drift_pct.toFixed(1)}%), ${d.stale} stale, ${d.missing} missing, coverage ${d.coverage_pct.toFixed(1)}%` : "—"}`,
          `vec index:  ${onPg ? "PostgreSQL (pgvector HNSW, else a bounded exact scan)" : s.vector_index.available ? "sqlite-vec" : `unavailable (${s.vector_index.reason})`}`,
          `re-embed:   ${s.reembed ? `${s.reembed.done}/${s.reembed.total}${s.reembed.hold_switch ? " (held)" : ""}` : "none"}`,
        ].join("\n"),
        s,
      );
      return s.degraded || s.drift?.model_changed ? 1 : 0;
    },
  },
  {
    name: "embeddings rebuild-index",
    usage: "embeddings rebuild-index <store>",
    summary: "rebuild the vec0 and HNSW indexes from the stored vectors (no provider call), e.g. after an extension upgrade (SQLite only; PostgreSQL: REINDEX)",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      refuseWithDatabaseUrl(
        () => `embeddings rebuild-index rebuilds the sqlite-vec (vec0) and HNSW index files of a SQLite store's index.db; with DATABASE_URL the vectors are in PostgreSQL, which keeps its indexes up to date on every write: to rebuild them anyway (after a pgvector upgrade, say) run REINDEX SCHEMA ${storeSchemaName(args[0])} in psql; \`dualmind reembed ${args[0]}\` recomputes the vectors themselves`,
      );
      const handle = openStore({ store: args[0] });
      const fp = await getEmbedder().fingerprint;
      const n = rebuildVecIndex({ handle, fingerprintId: fp.id, actor: ACTOR });
      const ann = rebuildAnnIndexes({ handle, fingerprintId: fp.id });
      out(`rebuilt the index over ${n} vector(s)`, { store: args[0], vectors: n, hnsw: ann });
    },
  },
  {
    name: "embeddings retry-parked",
    usage: "embeddings retry-parked <store>",
    summary: "queue parked items again (after fixing the provider)",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      const n = await embeddingsBackend().retryParkedEmbeddings({ store: args[0], actor: ACTOR });
      out(`${n} parked item(s) queued again`, { requeued: n });
    },
  },
  {
    name: "audit verify",
    usage: "audit verify",
    summary: "verify the audit log's hash chain (exit 1 if broken); with DATABASE_URL, the chain on PostgreSQL (ledger, users, stores) and the local governance.db's (what was written before DATABASE_URL was set)",
    run: async ({ out }) => {
      const pg = getPg();
      const say = (v: AuditVerification) => (v.ok ? `audit chain ok (${v.entries} entries)` : `audit chain BROKEN at entry ${v.brokenAtId}: ${v.reason}`);
      const local = verifyAuditChain();
      if (!pg) {
        out(say(local), local);
        return local.ok ? 0 : 1;
      }
      // With DATABASE_URL every served path audits on PostgreSQL; a local governance.db keeps the chain written before it was set (migrate-data copies it, the original stays): each verified on its own.
      const ledger = await verifyAuditChain({ handle: pgLedger((await pg).db) });
      out(`PostgreSQL (ledger, users, stores): ${say(ledger)}\nlocal governance.db (before DATABASE_URL): ${say(local)}`, { postgres: ledger, sqlite: local });
      return ledger.ok && local.ok ? 0 : 1;
    },
  },
];
