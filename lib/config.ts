import { z } from "zod";
import path from "node:path";

/**
 * Every setting dualmind reads from the environment, validated once.
 * Defaults work with nothing set: data in ./data, served on 127.0.0.1:3000.
 */
const boolFromEnv = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");

const globList = z
  .string()
  .transform((s) => s.split(",").map((g) => g.trim()).filter(Boolean));

export type SourceRoot = { store: string; dir: string; name: string };

/** `store=/abs/dir,other=/abs/dir2`: each root is indexed into its store as `source/<basename>/...`. */
function parseSourceRoots(raw: string, ctx: z.RefinementCtx): SourceRoot[] {
  const roots: SourceRoot[] = [];
  for (const entry of raw.split(",").map((e) => e.trim()).filter(Boolean)) {
    const eq = entry.indexOf("=");
    const store = entry.slice(0, eq);
    const dir = entry.slice(eq + 1);
    if (eq <= 0 || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(store) || !path.isAbsolute(dir)) {
      ctx.addIssue({ code: "custom", message: `entry ${JSON.stringify(entry)} must be <store>=<absolute directory>` });
      continue;
    }
    const root = { store, dir: path.resolve(dir), name: path.basename(path.resolve(dir)) };
    // Two roots of one store with one basename would map to the same document paths.
    if (roots.some((r) => r.store === store && r.name === root.name)) {
      ctx.addIssue({ code: "custom", message: `store ${store} has two roots named ${root.name}` });
      continue;
    }
    roots.push(root);
  }
  return roots;
}

/** A byte size from 1 KiB to 64 MiB, 1 MiB by default. */
const upToSixtyFourMiB = z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024);

const envSchema = z.object({
  DATA_DIR: z.string().min(1).default("./data"),
  // Set: the PostgreSQL backend (docs/postgresql.md). Unset: embedded SQLite in DATA_DIR.
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/[^\s]+$/, "must be a postgres:// or postgresql:// connection URL")
    .optional(),
  DUALMIND_PG_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  // 0 turns a limit off (PostgreSQL's own meaning); the defaults keep one stuck statement, lock wait or open transaction from holding a connection for ever.
  DUALMIND_PG_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(30_000),
  DUALMIND_PG_LOCK_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(10_000),
  DUALMIND_PG_IDLE_TX_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(60_000),
  HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:[\]-]+$/, "must be a host name or IP address")
    .default("127.0.0.1"),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  NEXTAUTH_URL: z.url().optional(),
  NEXTAUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  DUALMIND_ADMIN_PASSWORD: z.string().min(8, "must be at least 8 characters").optional(),
  DUALMIND_BOOTSTRAP_TOKEN: z.string().min(32, "must be at least 32 characters").optional(),
  // How many reverse proxies in front of the app append to X-Forwarded-For: true = 1, false = 0.
  DUALMIND_TRUST_PROXY: z
    .string()
    .regex(/^(true|false|[0-9])$/, "must be false, true or the number of proxies in front of the app (0-9)")
    .transform((v) => (v === "true" ? 1 : v === "false" ? 0 : Number(v)))
    .default(0),
  DUALMIND_MAX_BODY_BYTES: upToSixtyFourMiB,
  DUALMIND_DISABLE_VECTORS: boolFromEnv.default(false),
  DUALMIND_ANN_MIN_VECTORS: z.coerce.number().int().min(1).default(20_000),
  DUALMIND_WORD_LISTS_MIN_ROWS: z.coerce.number().int().min(0).default(20_000),
  DUALMIND_LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  DUALMIND_METRICS_PUBLIC_LOOPBACK: boolFromEnv.default(false),
  DUALMIND_CHECK_RESPONSES: boolFromEnv.optional(),
  DUALMIND_QUERY_BUDGET_MS: z.coerce.number().int().min(10).max(600_000).default(1000),
  DUALMIND_ALERT_WEBHOOK_URL: z.url({ protocol: /^https?$/, message: "must be an http(s) URL" }).optional(),
  // Embeddings
  DUALMIND_EMBED_PROVIDER: z.enum(["builtin", "transformers", "openai"]).default("builtin"),
  DUALMIND_EMBED_MODEL: z.string().min(1).max(200).optional(),
  DUALMIND_EMBED_DIM: z.coerce.number().int().min(8).max(8192).optional(),
  DUALMIND_EMBED_BASE_URL: z.url().default("https://api.openai.com/v1"),
  DUALMIND_EMBED_API_KEY: z.string().min(1).optional(),
  DUALMIND_EMBED_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  DUALMIND_EMBED_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).default(32),
  DUALMIND_EMBED_DOC_PREFIX: z.string().max(200).default(""),
  DUALMIND_EMBED_QUERY_PREFIX: z.string().max(200).default(""),
  DUALMIND_TRANSFORMERS_ALLOW_REMOTE: boolFromEnv.default(false),
  DUALMIND_EMBED_BACKLOG_WATERMARK: z.coerce.number().int().min(1).default(1000),
  DUALMIND_EMBED_WORKER: boolFromEnv.default(true),
  DUALMIND_EMBED_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(300_000),
  DUALMIND_EMBED_WORKER_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(120_000),
  DUALMIND_EMBED_OUTAGE_MAX_BACKOFF_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  DUALMIND_SOURCE_ROOTS: z
    .string()
    .transform((s, ctx) => parseSourceRoots(s, ctx))
    .default([]),
  DUALMIND_SOURCE_INCLUDE: globList.default(["**/*"]),
  DUALMIND_SOURCE_EXCLUDE: globList.default(["**/node_modules/**", "**/.git/**", "**/dist/**", "**/build/**"]),
  DUALMIND_MAX_FILE_BYTES: upToSixtyFourMiB,
  DUALMIND_MEMORY_WATCH: boolFromEnv.default(true),
  DUALMIND_MEMORY_SCAN_MS: z.coerce.number().int().min(1000).max(86_400_000).default(30_000),
  DUALMIND_MEMORY_TRASH_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  DUALMIND_EVALUATE_EVERY: z.enum(["off", "after-reindex", "daily", "weekly"]).default("daily"),
  DUALMIND_EVALUATE_CPU_SHARE: z.coerce.number().min(0.001).max(1).default(0.05),
  // Limits no token can exceed (SECURITY.md, "Limits").
  DUALMIND_MAX_STORES: z.coerce.number().int().min(2).max(100_000).default(200),
  DUALMIND_MAX_STORES_PER_TOKEN: z.coerce.number().int().min(0).max(100_000).default(20),
  DUALMIND_MAX_STORE_DOCUMENTS: z.coerce.number().int().min(1).max(1_000_000_000).default(100_000),
  DUALMIND_MAX_EVALUATIONS: z.coerce.number().int().min(1).max(64).default(2),
  DUALMIND_MAX_STORE_BYTES: z.coerce.number().int().min(1024).max(Number.MAX_SAFE_INTEGER).default(1024 * 1024 * 1024),
  DUALMIND_MAX_OPEN_STORES: z.coerce.number().int().min(2).max(10_000).default(64),
  DUALMIND_METRIC_ROUTE_KEYS: z.coerce.number().int().min(16).max(100_000).default(300),
  DUALMIND_MCP_BATCH_MAX: z.coerce.number().int().min(0).max(100).default(10),
  DUALMIND_MCP_BATCH_MAX_BYTES: z.coerce.number().int().min(64 * 1024).max(1024 * 1024 * 1024).default(4 * 1024 * 1024),
  DUALMIND_RECALL_EVENTS_MAX_ROWS: z.coerce.number().int().min(100).max(100_000_000).default(100_000),
  DUALMIND_RECALL_EVENTS_MAX_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
  DUALMIND_RECALL_LOG_MAX_BYTES: z.coerce.number().int().min(256 * 1024).max(Number.MAX_SAFE_INTEGER).default(64 * 1024 * 1024),
  DUALMIND_ACTIVITY_COUNTS_MAX_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
  DUALMIND_AUDIT_DETAIL_MAX_BYTES: z.coerce.number().int().min(256).max(1024 * 1024).default(8192),
  DUALMIND_ALERTS_PER_AGENT_PER_HOUR: z.coerce.number().int().min(0).max(100_000).default(10),
  DUALMIND_ALERTS_PER_STORE_PER_HOUR: z.coerce.number().int().min(0).max(100_000).default(6),
  DUALMIND_HEALTH_EVENTS_MAX_ROWS: z.coerce.number().int().min(100).max(10_000_000).default(10_000),
  DUALMIND_GOVERNANCE_FIELD_MAX_BYTES: z.coerce.number().int().min(1024).max(16 * 1024 * 1024).default(32 * 1024),
  DUALMIND_MAX_OPEN_TASKS_PER_AGENT: z.coerce.number().int().min(1).max(10_000_000).default(1000),
  DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT: z.coerce.number().int().min(1).max(10_000_000).default(200),
  DUALMIND_GOVERNANCE_MAX_BYTES: z.coerce.number().int().min(1024 * 1024).max(Number.MAX_SAFE_INTEGER).default(2 * 1024 * 1024 * 1024),
  DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: z.coerce.number().int().min(64 * 1024).max(Number.MAX_SAFE_INTEGER).optional(),
  DUALMIND_LIST_MAX_BYTES: z.coerce.number().int().min(16 * 1024).max(256 * 1024 * 1024).default(1024 * 1024),
  DUALMIND_WORKING_MEMORY_MAX_KEYS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  DUALMIND_MAX_CATEGORIES_PER_STORE: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  DUALMIND_MAX_WATCHED_DIRS: z.coerce.number().int().min(1).max(1_000_000).default(4096),
  DUALMIND_MAX_CHUNKS_PER_DOCUMENT: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  DUALMIND_MAX_CHUNKS_PER_REQUEST: z.coerce.number().int().min(1).max(10_000_000).default(2000),
  DUALMIND_MEMORY_TRASH_MAX_BYTES: z.coerce.number().int().min(64 * 1024).max(Number.MAX_SAFE_INTEGER).default(256 * 1024 * 1024),
  DUALMIND_MEMORY_TRASH_MAX_ENTRIES: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
})
  .superRefine((e, ctx) => {
    if (e.DUALMIND_EMBED_PROVIDER !== "builtin" && !e.DUALMIND_EMBED_MODEL) {
      ctx.addIssue({ code: "custom", path: ["DUALMIND_EMBED_MODEL"], message: `is required when DUALMIND_EMBED_PROVIDER=${e.DUALMIND_EMBED_PROVIDER}` });
    }
  });

export type Config = {
  dataDir: string;
  /** PostgreSQL connection URL; undefined = embedded SQLite (the default). */
  databaseUrl: string | undefined;
  /** Most connections one process keeps open to PostgreSQL. */
  pgPoolMax: number;
  /** Session limits set on every PostgreSQL connection (lib/db/pg.ts). */
  pgTimeouts: PgTimeouts;
  host: string;
  port: number;
  publicUrl: string;
  authSecret: string | undefined;
  adminPassword: string | undefined;
  bootstrapToken: string | undefined;
  /** Reverse proxies whose X-Forwarded-For entries are believed (0: none, see lib/auth/login-throttle.ts). */
  trustProxyHops: number;
  maxBodyBytes: number;
  disableVectors: boolean;
  /** Vectors of one kind and model from which KNN uses the approximate index (lib/embed/ann-index.ts); below, it stays exact-ish (SimHash + rescore). */
  annMinVectors: number;
  /** Rows of a store's chunk or whole-document index from which the server keeps word lists for broad queries (lib/retrieval/word-lists.ts); 0: none. */
  wordListsMinRows: number;
  logLevel: "debug" | "info" | "warn" | "error";
  /** Serve /api/metrics without a token to loopback callers of a loopback-bound server (off: a read token is always needed). */
  metricsPublicLoopback: boolean;
  /** Parse every API and MCP answer with its declared response schema; a mismatch is a 500 (tests, not production). */
  checkResponses: boolean;
  /** Store status changes and failed dialectic sessions are POSTed here as JSON (retried, never blocking a request). */
  alertWebhookUrl: string | undefined;
  /** Longest a user-driven query (search, recall, remember, list `q`) may run on a connection before it is interrupted. */
  queryBudgetMs: number;
  sourceRoots: SourceRoot[];
  sourceInclude: string[];
  sourceExclude: string[];
  maxFileBytes: number;
  /** Pick up edits made on disk in memory/ folders (a watcher, and a scan every `scanMs` as its fallback). */
  memoryWatch: { enabled: boolean; scanMs: number };
  /** Days a deleted memory stays in its store's trash before it is purged (0: none kept). */
  memoryTrashDays: number;
  /** Self-recall runs nobody asks for (lib/eval/schedule.ts): after a reindex, and every day or week; paced to a share of one core. */
  selfRecall: { every: "off" | "after-reindex" | "daily" | "weekly"; cpuShare: number };
  limits: LimitsConfig;
  embed: EmbedConfig;
};

/** Limits no token can exceed; each answers 429 or 422 naming its variable (SECURITY.md, "Limits"). */
export type LimitsConfig = {
  /** Stores one instance holds (core and default included). */
  maxStores: number;
  /** Stores one token (agent) may create; 0: only admins without a store list may create. */
  maxStoresPerToken: number;
  /** Documents (API documents and memories) one store holds; an API/MCP write past it → 422. Reindex from disk is never refused. */
  maxStoreDocuments: number;
  /** Self-recall evaluations running at once across all stores. */
  maxEvaluations: number;
  /** Bytes one store holds, every kind of row counted (lib/db/store-usage.ts); a write past it → 422. */
  maxStoreBytes: number;
  /** Store connections kept open at once; idle ones beyond it are closed least recently used first. */
  maxOpenStores: number;
  /** Distinct route keys the request metrics keep; more fall into one `other` key. */
  metricRouteKeys: number;
  /** Calls in one MCP JSON-RPC batch; 0 refuses batches. */
  mcpBatchMax: number;
  /** Bytes of tool answers one MCP request (a batch) carries together; later calls past it → 422. */
  mcpBatchMaxBytes: number;
  recallEventsMaxRows: number;
  recallEventsMaxDays: number;
  /** Bytes of recall log (events with their hits) kept per store, oldest dropped first (lib/recall/events.ts). */
  recallLogMaxBytes: number;
  /** Hourly per-agent retrieval counts older than this many days are dropped. */
  activityCountsMaxDays: number;
  /** Largest audit `details` JSON kept whole; larger is stored truncated and marked. */
  auditDetailMaxBytes: number;
  /** Operator alerts (webhook POSTs) one agent's actions may cause per hour; more are counted, not sent. */
  alertsPerAgentPerHour: number;
  alertsPerStorePerHour: number;
  healthEventsMaxRows: number;
  /** Largest task spec, validation details or review message (stored JSON bytes); larger → 422. */
  governanceFieldMaxBytes: number;
  /** Pending tasks one agent may have requested; another → 422. */
  maxOpenTasksPerAgent: number;
  /** Active reviews one agent may have opened; another → 422. */
  maxOpenReviewsPerAgent: number;
  /** The ledger's size past which agents' ledger and review writes are refused (507). */
  governanceMaxBytes: number;
  /** One agent's share of the ledger (its rows' bytes) past which its ledger and review writes are refused (422); default a quarter of governanceMaxBytes. */
  governanceMaxBytesPerAgent: number;
  /** Bytes of rows one list answer (tasks, reviews) carries; the rest is a `next_offset` away. */
  listMaxBytes: number;
  /** Live working-memory keys one store may hold; another → 422. */
  workingMemoryMaxKeys: number;
  /** Memory categories one store may hold; a write that would add another → 422. */
  maxCategoriesPerStore: number;
  /** Memory folders watched for changes across all stores; a store whose folders do not fit is left to the periodic scan. */
  maxWatchedDirs: number;
  /** Chunks one document sent over the API may split into; more → 422 before any work. */
  maxChunksPerDocument: number;
  maxChunksPerRequest: number;
  /** Bytes of deleted memories one store's trash keeps; past it the oldest are purged (audited). */
  memoryTrashMaxBytes: number;
  /** Deleted memories one store's trash keeps; past it the oldest are purged (audited). */
  memoryTrashMaxEntries: number;
};

/** Milliseconds; 0 = no limit. */
export type PgTimeouts = { statementMs: number; lockMs: number; idleInTransactionMs: number };

export type EmbedConfig = {
  provider: "builtin" | "transformers" | "openai";
  /** Model id; for builtin the hashing scheme's name. */
  model: string;
  /** Expected dimension (builtin: the dimension it makes). */
  dimension: number | undefined;
  baseUrl: string;
  apiKey: string | undefined;
  timeoutMs: number;
  batchSize: number;
  documentPrefix: string;
  queryPrefix: string;
  allowRemoteModels: boolean;
  backlogWatermark: number;
  /** Run the embed worker inside the server process. */
  workerInServer: boolean;
  /** How long a worker's claim on a batch lasts; a dead worker's items are claimed again after it. */
  leaseMs: number;
  /** How long the worker waits for one embedding request (capped below the lease: a slow answer is waited for, never sent twice). */
  workerTimeoutMs: number;
  /** Longest wait between probes while the provider is down or the disk is full (the queue is held, no attempts spent). */
  outageMaxBackoffMs: number;
};

export class ConfigError extends Error {
  constructor(public readonly issues: { variable: string; message: string }[]) {
    super(
      "Invalid configuration:\n" +
        issues.map((i) => `  ${i.variable}: ${i.message}`).join("\n"),
    );
    this.name = "ConfigError";
  }
}

/** Parse an environment (defaults to process.env). Throws ConfigError naming each bad variable. */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset": `FOO= npm start` should not fail validation.
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ""),
  );
  const result = envSchema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? "environment"),
        message: issue.message,
      })),
    );
  }
  const e = result.data;
  const hostForUrl = e.HOST.includes(":") ? `[${e.HOST}]` : e.HOST;
  return {
    dataDir: path.resolve(e.DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    pgPoolMax: e.DUALMIND_PG_POOL_MAX,
    pgTimeouts: { statementMs: e.DUALMIND_PG_STATEMENT_TIMEOUT_MS, lockMs: e.DUALMIND_PG_LOCK_TIMEOUT_MS, idleInTransactionMs: e.DUALMIND_PG_IDLE_TX_TIMEOUT_MS },
    host: e.HOST,
    port: e.PORT,
    publicUrl: e.NEXTAUTH_URL ?? `http://${hostForUrl}:${e.PORT}`,
    authSecret: e.NEXTAUTH_SECRET,
    adminPassword: e.DUALMIND_ADMIN_PASSWORD,
    bootstrapToken: e.DUALMIND_BOOTSTRAP_TOKEN,
    trustProxyHops: e.DUALMIND_TRUST_PROXY,
    maxBodyBytes: e.DUALMIND_MAX_BODY_BYTES,
    disableVectors: e.DUALMIND_DISABLE_VECTORS,
    annMinVectors: e.DUALMIND_ANN_MIN_VECTORS,
    wordListsMinRows: e.DUALMIND_WORD_LISTS_MIN_ROWS,
    logLevel: e.DUALMIND_LOG_LEVEL,
    metricsPublicLoopback: e.DUALMIND_METRICS_PUBLIC_LOOPBACK,
    alertWebhookUrl: e.DUALMIND_ALERT_WEBHOOK_URL,
    checkResponses: e.DUALMIND_CHECK_RESPONSES ?? env.NODE_ENV === "test",
    queryBudgetMs: e.DUALMIND_QUERY_BUDGET_MS,
    sourceRoots: e.DUALMIND_SOURCE_ROOTS,
    sourceInclude: e.DUALMIND_SOURCE_INCLUDE,
    sourceExclude: e.DUALMIND_SOURCE_EXCLUDE,
    maxFileBytes: e.DUALMIND_MAX_FILE_BYTES,
    memoryWatch: { enabled: e.DUALMIND_MEMORY_WATCH, scanMs: e.DUALMIND_MEMORY_SCAN_MS },
    memoryTrashDays: e.DUALMIND_MEMORY_TRASH_DAYS,
    selfRecall: { every: e.DUALMIND_EVALUATE_EVERY, cpuShare: e.DUALMIND_EVALUATE_CPU_SHARE },
    limits: {
      maxStores: e.DUALMIND_MAX_STORES,
      maxStoresPerToken: e.DUALMIND_MAX_STORES_PER_TOKEN,
      maxStoreDocuments: e.DUALMIND_MAX_STORE_DOCUMENTS,
      maxEvaluations: e.DUALMIND_MAX_EVALUATIONS,
      maxStoreBytes: e.DUALMIND_MAX_STORE_BYTES,
      maxOpenStores: e.DUALMIND_MAX_OPEN_STORES,
      metricRouteKeys: e.DUALMIND_METRIC_ROUTE_KEYS,
      mcpBatchMax: e.DUALMIND_MCP_BATCH_MAX,
      mcpBatchMaxBytes: e.DUALMIND_MCP_BATCH_MAX_BYTES,
      recallEventsMaxRows: e.DUALMIND_RECALL_EVENTS_MAX_ROWS,
      recallEventsMaxDays: e.DUALMIND_RECALL_EVENTS_MAX_DAYS,
      recallLogMaxBytes: e.DUALMIND_RECALL_LOG_MAX_BYTES,
      activityCountsMaxDays: e.DUALMIND_ACTIVITY_COUNTS_MAX_DAYS,
      auditDetailMaxBytes: e.DUALMIND_AUDIT_DETAIL_MAX_BYTES,
      alertsPerAgentPerHour: e.DUALMIND_ALERTS_PER_AGENT_PER_HOUR,
      alertsPerStorePerHour: e.DUALMIND_ALERTS_PER_STORE_PER_HOUR,
      healthEventsMaxRows: e.DUALMIND_HEALTH_EVENTS_MAX_ROWS,
      governanceFieldMaxBytes: e.DUALMIND_GOVERNANCE_FIELD_MAX_BYTES,
      maxOpenTasksPerAgent: e.DUALMIND_MAX_OPEN_TASKS_PER_AGENT,
      maxOpenReviewsPerAgent: e.DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT,
      governanceMaxBytes: e.DUALMIND_GOVERNANCE_MAX_BYTES,
      governanceMaxBytesPerAgent: e.DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT ?? Math.floor(e.DUALMIND_GOVERNANCE_MAX_BYTES / 4),
      listMaxBytes: e.DUALMIND_LIST_MAX_BYTES,
      workingMemoryMaxKeys: e.DUALMIND_WORKING_MEMORY_MAX_KEYS,
      maxCategoriesPerStore: e.DUALMIND_MAX_CATEGORIES_PER_STORE,
      maxWatchedDirs: e.DUALMIND_MAX_WATCHED_DIRS,
      maxChunksPerDocument: e.DUALMIND_MAX_CHUNKS_PER_DOCUMENT,
      maxChunksPerRequest: e.DUALMIND_MAX_CHUNKS_PER_REQUEST,
      memoryTrashMaxBytes: e.DUALMIND_MEMORY_TRASH_MAX_BYTES,
      memoryTrashMaxEntries: e.DUALMIND_MEMORY_TRASH_MAX_ENTRIES,
    },
    embed: {
      provider: e.DUALMIND_EMBED_PROVIDER,
      model: e.DUALMIND_EMBED_MODEL ?? "dualmind-hash-v1",
      dimension: e.DUALMIND_EMBED_DIM ?? (e.DUALMIND_EMBED_PROVIDER === "builtin" ? 384 : undefined),
      baseUrl: e.DUALMIND_EMBED_BASE_URL.replace(/\/+$/, ""),
      apiKey: e.DUALMIND_EMBED_API_KEY,
      timeoutMs: e.DUALMIND_EMBED_TIMEOUT_MS,
      batchSize: e.DUALMIND_EMBED_BATCH_SIZE,
      documentPrefix: e.DUALMIND_EMBED_DOC_PREFIX,
      queryPrefix: e.DUALMIND_EMBED_QUERY_PREFIX,
      allowRemoteModels: e.DUALMIND_TRANSFORMERS_ALLOW_REMOTE,
      backlogWatermark: e.DUALMIND_EMBED_BACKLOG_WATERMARK,
      workerInServer: e.DUALMIND_EMBED_WORKER,
      leaseMs: e.DUALMIND_EMBED_LEASE_MS,
      workerTimeoutMs: e.DUALMIND_EMBED_WORKER_TIMEOUT_MS,
      outageMaxBackoffMs: e.DUALMIND_EMBED_OUTAGE_MAX_BACKOFF_MS,
    },
  };
}

let cached: Config | undefined;

/** The process-wide config, parsed on first use. */
export function getConfig(): Config {
  cached ??= parseConfig();
  return cached;
}

/** Tests point the app at a fresh DATA_DIR; this drops the cached parse. */
export function resetConfigForTests(): void {
  cached = undefined;
}

/** Rows for the README/--help configuration table; kept beside the schema so they stay true. */
export const CONFIG_DOCS: { variable: string; default: string; meaning: string }[] = [
  { variable: "DATA_DIR", default: "./data", meaning: "where governance.db and stores/<name>/ live" },
  { variable: "DATABASE_URL", default: "unset (SQLite)", meaning: "postgres:// URL: the governance ledger (tasks, runs, validations, provenance, overrides, dialectic sessions, API tokens and their audit rows), users, sign-in, the login throttle and health events are served from PostgreSQL, and so are the stores (with their embed queue) behind the API's and MCP's store list, documents, chunks, search, memories, categories, verify, reindex, jobs, traces, learnings, recall, reflection settings, store health, re-embed, retry-parked, thoughts, chains, nodes, relations, frames, evidence, working memory and remember (replicas may share the database for these: every store route and MCP tool); the dashboard reads them too, saying so in one line where a piece is not kept there yet (none reads local SQLite in DATA_DIR); see docs/postgresql.md" },
  { variable: "DUALMIND_PG_POOL_MAX", default: "10", meaning: "most PostgreSQL connections one process keeps open (with DATABASE_URL)" },
  { variable: "DUALMIND_PG_STATEMENT_TIMEOUT_MS", default: "30000", meaning: "PostgreSQL statement_timeout of every pooled connection: a longer statement is cancelled (503); 0 = the server's own setting" },
  { variable: "DUALMIND_PG_LOCK_TIMEOUT_MS", default: "10000", meaning: "PostgreSQL lock_timeout: a longer wait for a row, table or advisory lock fails (503) instead of queueing for ever; 0 = the server's own" },
  { variable: "DUALMIND_PG_IDLE_TX_TIMEOUT_MS", default: "60000", meaning: "PostgreSQL idle_in_transaction_session_timeout: a transaction left idle longer is ended, freeing its locks; 0 = the server's own" },
  { variable: "HOST", default: "127.0.0.1", meaning: "address to bind; loopback unless you mean it" },
  { variable: "PORT", default: "3000", meaning: "port to serve on" },
  { variable: "NEXTAUTH_URL", default: "http://HOST:PORT", meaning: "public URL of the dashboard (sign-in callbacks)" },
  { variable: "NEXTAUTH_SECRET", default: "generated into DATA_DIR/.auth-secret", meaning: "secret signing session JWTs (≥32 chars)" },
  { variable: "DUALMIND_ADMIN_PASSWORD", default: "generated, printed once", meaning: "password of the first `admin` user when no users exist" },
  { variable: "DUALMIND_BOOTSTRAP_TOKEN", default: "unset", meaning: "optional admin-scope API token for automation (≥32 chars, agent id `bootstrap`)" },
  { variable: "DUALMIND_TRUST_PROXY", default: "false", meaning: "number of reverse proxies in front of the app (true = 1) whose X-Forwarded-For is believed for the per-address sign-in limit (and whose X-Forwarded-Host/-Proto the API page's examples use)" },
  { variable: "DUALMIND_MAX_BODY_BYTES", default: "1048576", meaning: "largest accepted API request body; larger → 413" },
  { variable: "DUALMIND_DISABLE_VECTORS", default: "false", meaning: "do not load sqlite-vec (lexical only)" },
  { variable: "DUALMIND_ANN_MIN_VECTORS", default: "20000", meaning: "vectors of one kind and model from which vector search uses the approximate (HNSW, usearch) index kept in stores/<store>/index.ann/; smaller sets use SimHash + exact rescoring" },
  { variable: "DUALMIND_MEMORY_WATCH", default: "true", meaning: "notice memory files edited, added, deleted or renamed on disk (a watcher plus a periodic scan) and re-index them within seconds, audited as store.file_change; false: only a reindex picks them up" },
  { variable: "DUALMIND_MEMORY_TRASH_DAYS", default: "30", meaning: "days a deleted memory stays in its store's trash, restorable, before it is purged (0: deleted memories are not kept)" },
  { variable: "DUALMIND_EVALUATE_EVERY", default: "daily", meaning: "self-recall evaluations nobody asks for: `daily` or `weekly` (and after a reindex that changed the store), `after-reindex` only, or `off`" },
  { variable: "DUALMIND_EVALUATE_CPU_SHARE", default: "0.05", meaning: "share of one core a scheduled or after-reindex evaluation takes while it runs (it pauses between its questions; 1: unpaced); on-demand runs are not paced" },
  { variable: "DUALMIND_MEMORY_SCAN_MS", default: "30000", meaning: "the memory folder watcher's fallback scan interval, for file systems without change events (1000–86400000)" },
  { variable: "DUALMIND_WORD_LISTS_MIN_ROWS", default: "20000", meaning: "rows of a store's full-text index (chunks, whole documents, thoughts, nodes, traces, learnings) from which the server builds and keeps its word lists in index.db, so broad queries are ranked without FTS5 scoring every match; 0: none (lists already built are dropped)" },
  { variable: "DUALMIND_LOG_LEVEL", default: "info", meaning: "debug | info | warn | error" },
  { variable: "DUALMIND_METRICS_PUBLIC_LOOPBACK", default: "false", meaning: "let /api/metrics answer without a token when HOST is loopback and the request names a loopback Host (off: Prometheus sends a read-scope token)" },
  { variable: "DUALMIND_CHECK_RESPONSES", default: "true under NODE_ENV=test, else false", meaning: "check every API and MCP answer against its declared response schema (a mismatch answers 500); for tests and development, not production" },
  { variable: "DUALMIND_QUERY_BUDGET_MS", default: "1000", meaning: "longest a search, recall, remember or list query may hold the database before it is interrupted (422 query_too_expensive); raise it for stores of 100k+ chunks" },
  { variable: "DUALMIND_ALERT_WEBHOOK_URL", default: "unset", meaning: "http(s) URL that receives a JSON POST for each store status change (degraded, drifted, provider down, parked, back to healthy) and each failed dialectic session; retried with backoff, never blocks a request" },
  { variable: "DUALMIND_EMBED_PROVIDER", default: "builtin", meaning: "builtin (offline hashed n-grams) | transformers (local ONNX model) | openai (any OpenAI-compatible /v1/embeddings)" },
  { variable: "DUALMIND_EMBED_MODEL", default: "dualmind-hash-v1", meaning: "model id (required for transformers and openai; a local directory or hub id for transformers)" },
  { variable: "DUALMIND_EMBED_DIM", default: "384 for builtin", meaning: "vector dimension; for remote providers the expected one (a mismatch is an error)" },
  { variable: "DUALMIND_EMBED_BASE_URL", default: "https://api.openai.com/v1", meaning: "OpenAI-compatible base URL (Ollama: http://127.0.0.1:11434/v1)" },
  { variable: "DUALMIND_EMBED_API_KEY", default: "unset", meaning: "bearer key for the openai provider" },
  { variable: "DUALMIND_EMBED_TIMEOUT_MS", default: "30000", meaning: "per-request timeout for the openai provider" },
  { variable: "DUALMIND_EMBED_BATCH_SIZE", default: "32", meaning: "texts per embedding request / worker batch" },
  { variable: "DUALMIND_EMBED_DOC_PREFIX", default: "empty", meaning: "text prepended to documents (e.g. `passage: ` for e5 models)" },
  { variable: "DUALMIND_EMBED_QUERY_PREFIX", default: "empty", meaning: "text prepended to queries (e.g. `query: `)" },
  { variable: "DUALMIND_TRANSFORMERS_ALLOW_REMOTE", default: "false", meaning: "let the transformers provider download a model by id (off: local files only)" },
  { variable: "DUALMIND_EMBED_BACKLOG_WATERMARK", default: "1000", meaning: "embed queue length above which a store degrades to lexical recall" },
  { variable: "DUALMIND_EMBED_WORKER", default: "true", meaning: "run the embed worker inside the server (false: run `npm run worker` separately)" },
  { variable: "DUALMIND_EMBED_WORKER_TIMEOUT_MS", default: "120000", meaning: "how long the embed worker waits for one provider request (at most 80% of the lease); a slow provider is waited for, not sent the same texts again" },
  { variable: "DUALMIND_EMBED_OUTAGE_MAX_BACKOFF_MS", default: "60000", meaning: "longest pause between probes while the embedding provider is down or the disk is full; the queue is held meanwhile without spending item attempts (see docs/embedding-queue.md)" },
  { variable: "DUALMIND_EMBED_LEASE_MS", default: "300000", meaning: "how long a worker's claim on a batch of the embed queue lasts; the items of a worker that died (a replica killed mid-batch) are claimed again by another when it runs out" },
  { variable: "DUALMIND_SOURCE_ROOTS", default: "unset", meaning: "extra folders to index: `store=/abs/dir,...`; each becomes `source/<basename>/...` in that store" },
  { variable: "DUALMIND_SOURCE_INCLUDE", default: "**/*", meaning: "comma-separated globs (relative to a source root) of files to index" },
  { variable: "DUALMIND_SOURCE_EXCLUDE", default: "**/node_modules/**,**/.git/**,**/dist/**,**/build/**", meaning: "comma-separated globs of files to skip; hidden files are always skipped" },
  { variable: "DUALMIND_MAX_FILE_BYTES", default: "1048576", meaning: "larger files are skipped (and counted) by reindex" },
  { variable: "DUALMIND_MAX_STORES", default: "200", meaning: "stores one instance holds (core and default included); one more → 422 naming this variable" },
  { variable: "DUALMIND_MAX_STORES_PER_TOKEN", default: "20", meaning: "stores one agent may create (counted from the audit log); one more → 422 naming this variable" },
  { variable: "DUALMIND_MAX_STORE_DOCUMENTS", default: "100000", meaning: "documents (API documents and memories) one store holds; a write adding one more → 422 naming this variable (reindex from disk is not refused)" },
  { variable: "DUALMIND_MAX_EVALUATIONS", default: "2", meaning: "self-recall evaluations running at once across all stores (each is a burst of searches); one more → 429 naming this variable" },
  { variable: "DUALMIND_MAX_STORE_BYTES", default: "1073741824", meaning: "bytes one store takes, every kind of row counted (64 bytes a row plus its text: documents and memories, categories, thoughts, chains, graph nodes, frames, relations, evidence links, working memory, traces, learnings) and what is derived from them (chunks, full-text and word-list entries, a vector for each embedded row at the configured dimension), so the store's files stay within 1.25 times it beyond an empty store's (1 GiB); a write taking the store past it → 422 naming this variable (an update counts the difference, a delete frees room)" },
  { variable: "DUALMIND_MAX_OPEN_STORES", default: "64", meaning: "store connections one process keeps open; beyond it idle ones are closed least recently used first (reopened on use)" },
  { variable: "DUALMIND_METRIC_ROUTE_KEYS", default: "300", meaning: "distinct route keys request metrics keep (in memory and in the rollups); later keys are counted under `other`" },
  { variable: "DUALMIND_MCP_BATCH_MAX", default: "10", meaning: "calls one MCP JSON-RPC batch may hold, sharing one query budget; more → 422 naming this variable; 0 refuses batches" },
  { variable: "DUALMIND_MCP_BATCH_MAX_BYTES", default: "4194304", meaning: "bytes of answers one MCP request (a batch) may carry together (tool results with their structuredContent, and resources read); the first call always answers, a later one past it, and every one after, is refused with 422 naming this variable before doing its work" },
  { variable: "DUALMIND_RECALL_EVENTS_MAX_ROWS", default: "100000", meaning: "recall log rows kept per store (oldest dropped first); logged query text is cut to 500 characters" },
  { variable: "DUALMIND_RECALL_EVENTS_MAX_DAYS", default: "90", meaning: "recall log rows older than this are dropped" },
  { variable: "DUALMIND_RECALL_LOG_MAX_BYTES", default: "67108864", meaning: "bytes of recall log kept per store (each event counts 128 bytes plus its text, each hit 64 bytes plus its summary, cut to 300 characters); past it the oldest events are dropped at the recall that crosses it (64 MiB)" },
  { variable: "DUALMIND_ACTIVITY_COUNTS_MAX_DAYS", default: "90", meaning: "hourly per-agent search, recall and remember counts (the activity summary) older than this are dropped" },
  { variable: "DUALMIND_AUDIT_DETAIL_MAX_BYTES", default: "8192", meaning: "largest audit-row details kept whole; larger details are stored cut and marked `truncated`" },
  { variable: "DUALMIND_ALERTS_PER_AGENT_PER_HOUR", default: "10", meaning: "alert webhook POSTs one agent's actions may cause per hour; the rest are not sent, and each health event says so" },
  { variable: "DUALMIND_ALERTS_PER_STORE_PER_HOUR", default: "6", meaning: "alert webhook POSTs one store's status changes may cause per hour (a store flapping between healthy and degraded); the rest are recorded on Health, not sent, and each event says so" },
  { variable: "DUALMIND_HEALTH_EVENTS_MAX_ROWS", default: "10000", meaning: "health events (status changes, failed reviews, self-recall drops) kept; older ones are deleted as new ones come" },
  { variable: "DUALMIND_GOVERNANCE_FIELD_MAX_BYTES", default: "32768", meaning: "largest task `spec`, validation `details` or review message (all its text together), as stored JSON bytes; larger → 422 naming this variable" },
  { variable: "DUALMIND_MAX_OPEN_TASKS_PER_AGENT", default: "1000", meaning: "pending tasks (no verdict yet) one agent may have requested; another → 422 naming this variable" },
  { variable: "DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT", default: "200", meaning: "active reviews one agent may have opened; another → 422 naming this variable" },
  { variable: "DUALMIND_GOVERNANCE_MAX_BYTES", default: "2147483648", meaning: "size of the ledger (governance.db's used pages; on PostgreSQL its tables) past which agents' new tasks, runs, validations, overrides, provenance and review writes, and their store writes (each adds an audit row), answer 507 naming this variable; checked before each write, so the ledger passes it by at most one write per concurrent transaction (on PostgreSQL the size is measured at most once a second, the rows written since added as counted; SECURITY.md)" },
  { variable: "DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT", default: "a quarter of DUALMIND_GOVERNANCE_MAX_BYTES", meaning: "one agent's share of the ledger, counted as an upper bound of what the tasks, runs, validations, provenance facts, overrides, reviews and messages it wrote take on disk; a write that would take the agent past it answers 422 naming this variable, so one agent cannot fill the ledger for everyone" },
  { variable: "DUALMIND_LIST_MAX_BYTES", default: "1048576", meaning: "bytes of rows one agent's task list, review list with transcripts, or a store's node, thought, trace, learning or working-memory list (REST and MCP) carries (rows past it are left for `next_offset`; a transcript alone past it is left out and marked `transcript_omitted`); task status and provenance answers keep the newest of each list within it and count the rest in `omitted`" },
  { variable: "DUALMIND_MEMORY_TRASH_MAX_BYTES", default: "268435456", meaning: "bytes of deleted memories one store's trash keeps; past it the oldest are purged first, each audited as `memory.purge`" },
  { variable: "DUALMIND_MEMORY_TRASH_MAX_ENTRIES", default: "10000", meaning: "deleted memories one store's trash keeps, however small; past it the oldest are purged first, each audited as `memory.purge` naming this variable" },
  { variable: "DUALMIND_WORKING_MEMORY_MAX_KEYS", default: "1000", meaning: "live working-memory keys one store may hold; another → 422 naming this variable" },
  { variable: "DUALMIND_MAX_CHUNKS_PER_DOCUMENT", default: "1000", meaning: "chunks one document written with PUT /documents (or MCP) may split into; a document of more (very short lines or headings) → 422 naming this variable, before anything is written" },
  { variable: "DUALMIND_MAX_CHUNKS_PER_REQUEST", default: "2000", meaning: "chunks all documents of one PUT /documents (or MCP write) split into together; more → 422 naming this variable, before anything is written" },
  { variable: "DUALMIND_MAX_WATCHED_DIRS", default: "4096", meaning: "memory folders the watcher holds an inotify watch on, across all stores (one per folder, none per file); a store whose folders do not fit is left to the periodic scan (DUALMIND_MEMORY_SCAN_MS), and /health counts such stores in `memory_watch`" },
  { variable: "DUALMIND_MAX_CATEGORIES_PER_STORE", default: "10000", meaning: "memory categories (folders) one store may hold; a memory write or category describe that would add another → 422 naming this variable" },
];
