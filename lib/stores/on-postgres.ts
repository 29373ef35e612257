import { getConfig } from "../config";
import { AppError } from "../errors";

/** Whether stores live in PostgreSQL (DATABASE_URL): what is not ported answers 501 then. */
export function storesOnPostgres(): boolean {
  return Boolean(getConfig().databaseUrl);
}

/**
 * The refusal of a store operation not yet served from PostgreSQL: 501, naming
 * it, never an answer read from a local store the PostgreSQL stores do not see.
 */
export function notServedOnPostgres(what: string): AppError {
  return new AppError(
    "not_implemented",
    `${what} is not served yet with DATABASE_URL: stores are on PostgreSQL, and this operation still works only on the embedded SQLite backend`,
    [{ path: "DATABASE_URL", message: `${what}: not yet ported to the PostgreSQL store backend`, operation: what }],
  );
}
