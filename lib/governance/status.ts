import fs from "node:fs";
import { isNull } from "drizzle-orm";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { count, readLedger, type LedgerHandle, type OnLedger } from "../db/port";
import { ledgerTables } from "./tables";

export type GovernanceStatus = { file: string; bytes: number; walBytes: number; schemaVersion: string | null; users: number; tokens: number; auditEntries: number };

/** People, active tokens and audit entries where they live (governance.db or PostgreSQL): the dashboard reads them through governance(). */
export type GovernanceCounts = Pick<GovernanceStatus, "users" | "tokens" | "auditEntries">;

export function countGovernanceRows<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H }: { handle?: H } = {}): OnLedger<H, GovernanceCounts> {
  const { users, apiTokens, auditLog } = ledgerTables;
  return readLedger(handle, function* () {
    return { users: yield* count(users), tokens: yield* count(apiTokens, (t) => isNull(t.revoked_at)), auditEntries: yield* count(auditLog) };
  });
}

/** The local governance.db: its file sizes, schema and counts. */
export function getGovernanceStatus(): GovernanceStatus {
  const { sqlite, file } = getGovernance();
  const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
  const version = sqlite.prepare("select value from meta where key = 'schema_version'").get() as { value: string } | undefined;
  return {
    file,
    bytes: size(file),
    walBytes: size(file + "-wal"),
    schemaVersion: version?.value ?? null,
    ...countGovernanceRows(),
  };
}
