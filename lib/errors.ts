import { DrizzleError, DrizzleQueryError } from "drizzle-orm/errors";

/**
 * The one typed error of the domain. The API wrapper, server actions, MCP and
 * the CLI all turn it into their own surface; the code is stable, the status
 * follows from it.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** A write to an archived store: it is read-only until an admin unarchives it. */
  store_archived: 409,
  /** Invalidating an item that is already retired (lib/index/item-state.ts). */
  item_already_retired: 409,
  /** Restoring an item that is not retired. */
  item_not_retired: 409,
  /** Deciding a proposal that is not (any more) proposed, or restoring a proposal instead of approving it (lib/index/proposals.ts). */
  not_proposed: 409,
  /** A reviewer approving or rejecting its own proposal. */
  self_review: 403,
  /** Under a store's review policy: an agent that is not trusted changing an existing item, or deciding a proposal (lib/index/proposals.ts). */
  review_required: 403,
  /** Changing a proposal other than by approving it with an edit. */
  review_pending: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  /** A well-formed query that did not finish within DUALMIND_QUERY_BUDGET_MS: narrow it. */
  query_too_expensive: 422,
  rate_limited: 429,
  internal: 500,
  /** A feature this backend does not serve yet (e.g. dialectic export on PostgreSQL): not a fault, not worth a retry. */
  not_implemented: 501,
  unavailable: 503,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export type ErrorDetail = { path?: string; message: string; [key: string]: unknown };

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
    this.name = "AppError";
    this.status = ERROR_STATUS[code];
  }

  toBody() {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}

function errorCode(e: unknown): string | null {
  return typeof e === "object" && e !== null && "code" in e && typeof (e as { code: unknown }).code === "string" ? (e as { code: string }).code : null;
}

/** PostgreSQL SQLSTATEs (and pool states) that mean "the database, not the request": retry shortly (503). */
function isPgUnavailable(code: string | null, message: string): boolean {
  if (code === "40001" || code === "40P01") return true; // serialization failure, deadlock: the other transaction won
  if (code === "53300" || code === "57P01" || code === "57P02" || code === "57P03") return true; // too many connections, shutting down, starting up
  // Connection exceptions — but not 08P01 (protocol violation), which a client bug raises (wrong parameter count):
  // that is a 500 to fix, not a 503 to retry forever.
  if (code !== null && PG_CONNECTION_LOST.has(code)) return true;
  // The socket never opened (server down, wrong host): node's own codes, before PostgreSQL can say anything.
  if (code !== null && SOCKET_UNREACHABLE.has(code)) return true;
  // node-postgres says these without a code: the pool gave up waiting for a free connection, or the connection died.
  return PG_DRIVER_UNAVAILABLE.has(message);
}

const PG_CONNECTION_LOST = new Set(["08000", "08001", "08003", "08004", "08006"]);
const SOCKET_UNREACHABLE = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);

const PG_DRIVER_UNAVAILABLE = new Set([
  "timeout exceeded when trying to connect",
  "Connection terminated unexpectedly",
  "Client has encountered a connection error and is not queryable",
]);

/** The store usage triggers' refusal (lib/db/store-usage.ts): SQLite's RAISE message, PostgreSQL's SQLSTATE. */
export const STORE_BYTES_REFUSAL = "dualmind_store_bytes";
export const STORE_BYTES_SQLSTATE = "DMQ01";

/** A write refused by a store's byte quota: 422 naming DUALMIND_MAX_STORE_BYTES, with the total it would reach and the limit. */
function storeBytesRefusal(code: string | null, message: string): AppError | null {
  if (code !== STORE_BYTES_SQLSTATE && !(code === "SQLITE_CONSTRAINT_TRIGGER" && message.startsWith(`${STORE_BYTES_REFUSAL}:`))) return null;
  const [, total, most] = /:(\d+):(\d+)/.exec(message) ?? [];
  const why = total ? `this write would take the store to ${total} bytes, its most is ${most}` : "this write would take the store past its most bytes";
  return new AppError("unprocessable", `${why} (limit DUALMIND_MAX_STORE_BYTES)`, [{ path: "limit", message: why, limit: "DUALMIND_MAX_STORE_BYTES" }]);
}

/** A database error's code (SQLSTATE on PostgreSQL, SQLITE_* on SQLite): Drizzle wraps the driver's error, so it is on it or on its cause. */
export function dbErrorCode(e: unknown): string | undefined {
  return (e as { code?: string })?.code ?? (e as { cause?: { code?: string } })?.cause?.code;
}

/**
 * Errors of the machine rather than the request: a busy or interrupted
 * database (503) and a full disk, whether SQLite says so (SQLITE_FULL) or the file system does
 * (ENOSPC, EDQUOT) (507); on PostgreSQL, a deadlock or serialization loser, a
 * lost or refused connection, a full pool (503) and disk_full (507). Writes are transactions, so the write that failed
 * is not there; a few paths audit after their commit, so the message does not
 * promise that nothing at all was written. Null for anything else.
 */
export function infrastructureError(e: unknown): AppError | null {
  // drizzle-orm wraps a driver's error in its own with the original as cause. A bundled server can hold more than
  // one copy of drizzle-orm's classes, so a codeless error whose cause has a code is unwrapped too.
  const cause = e instanceof DrizzleQueryError || e instanceof DrizzleError || (errorCode(e) === null && errorCode((e as { cause?: unknown } | null)?.cause) !== null) ? (e as { cause: unknown }).cause : e;
  const code = errorCode(cause);
  const quota = storeBytesRefusal(code, cause instanceof Error ? cause.message : "");
  if (quota) return quota;
  if (isPgUnavailable(code, cause instanceof Error ? cause.message : "")) return new AppError("unavailable", "database is busy or unreachable, retry shortly");
  // The session limits of lib/db/pg.ts: a statement, a lock wait or an idle transaction that went on too long.
  if (code === "57014") return new AppError("unavailable", "a database statement ran past its time limit (DUALMIND_PG_STATEMENT_TIMEOUT_MS) and was cancelled; retry shortly");
  if (code === "55P03") return new AppError("unavailable", "a database lock was held by another request for too long (DUALMIND_PG_LOCK_TIMEOUT_MS); retry shortly");
  if (code === "25P03") return new AppError("unavailable", "a database transaction stayed idle too long (DUALMIND_PG_IDLE_TX_TIMEOUT_MS) and was ended; retry");
  if (code === "53100") return new AppError("insufficient_storage", "storage is full; the write did not complete");
  // Not the machine's: PostgreSQL text cannot hold U+0000 (SQLite can), so a NUL in stored text is refused as the input it is, not a 500.
  if (code === "22021" || code === "22P05") return new AppError("invalid_request", "the text holds a character PostgreSQL cannot store (NUL, U+0000): remove it and retry");
  if (!code) return null;
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return new AppError("unavailable", "database is busy, retry shortly");
  if (code.startsWith("SQLITE_FULL") || code === "ENOSPC" || code === "EDQUOT") return new AppError("insufficient_storage", "storage is full; the write did not complete");
  // A database or folder that cannot be written (a read-only mount or file): reads go on, /health names what is read-only.
  if (code.startsWith("SQLITE_READONLY") || code === "EROFS") return new AppError("unavailable", "the data is read-only here (a read-only file or mount, see /health); the write did not complete, reads still work");
  // Budgeted queries turn their own interrupt into query_too_expensive; any other statement caught by one is retryable.
  if (code === "SQLITE_INTERRUPT") return new AppError("unavailable", "a database statement was interrupted, retry shortly");
  return null;
}
