import { z } from "zod";
import { SCOPES } from "../../auth/tokens";
import { count, epochMs, exact } from "./common";

export const healthResponse = exact({
  ok: z.literal(true),
  versions: exact({ app: z.string(), node: z.string(), sqlite: z.string() }),
  /** Parts of DATA_DIR that cannot be written (a read-only file or mount): reads are served, writes to them answer 503. */
  read_only: z.array(exact({ part: z.string(), reason: z.string() })),
  /** Memory folders watched for changes (SQLite), within DUALMIND_MAX_WATCHED_DIRS; stores whose folders did not fit are left to the periodic scan. */
  memory_watch: exact({ watched_dirs: z.number().int(), max_watched_dirs: z.number().int(), scan_only_stores: z.number().int() }),
});

export const storeSummary = exact({
  name: z.string(),
  description: z.string().nullable(),
  /** Read-only (writes answer 409 store_archived) until an admin unarchives it. */
  archived: z.boolean(),
  created_at: epochMs.nullable(),
  schema_version: z.string().nullable(),
  vectors: exact({ available: z.boolean(), version: z.string().nullable(), reason: z.string().nullable() }),
  /** Rows per table: the keys are table names (data), not fields. */
  counts: z.record(z.string(), count),
  /** The store's files on disk; null on PostgreSQL (DATABASE_URL), where a store is a schema. `memory_files`: null in GET /stores (GET /stores/{store} counts them). */
  files: exact({ index_bytes: count, wal_bytes: count, memory_files: count.nullable() }).nullable(),
});
export const storeListResponse = exact({ stores: z.array(storeSummary) });
export const storeLifecycleResponse = exact({ store: z.string(), archived: z.boolean() });

export const tokenInfo = exact({
  id: z.number().int(),
  label: z.string(),
  agent_id: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  stores: z.array(z.string()).nullable(),
  display_prefix: z.string(),
  created_by: z.string(),
  created_at: epochMs,
  last_used_at: epochMs.nullable(),
  revoked_at: epochMs.nullable(),
});
export const tokenListResponse = exact({ tokens: z.array(tokenInfo) });
/** The secret is shown once, here. */
export const tokenCreatedResponse = tokenInfo.extend({ token: z.string() });
