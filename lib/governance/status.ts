import fs from "node:fs";
import { getGovernance } from "../db/connection";

export type GovernanceStatus = { file: string; bytes: number; walBytes: number; schemaVersion: string | null; users: number; tokens: number; auditEntries: number };

/** People, active tokens and audit entries where they live: the dashboard reads them through governance() (the PostgreSQL twin is ./status-pg.ts). */
export type GovernanceCounts = Pick<GovernanceStatus, "users" | "tokens" | "auditEntries">;

export function countGovernanceRows(): GovernanceCounts {
  const { users, tokens, auditEntries } = getGovernanceStatus();
  return { users, tokens, auditEntries };
}

/** The local governance.db: its file sizes, schema and counts. */
export function getGovernanceStatus(): GovernanceStatus {
  const { sqlite, file } = getGovernance();
  const n = (sql: string) => (sqlite.prepare(sql).get() as { n: number }).n;
  const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
  const version = sqlite.prepare("select value from meta where key = 'schema_version'").get() as { value: string } | undefined;
  return {
    file,
    bytes: size(file),
    walBytes: size(file + "-wal"),
    schemaVersion: version?.value ?? null,
    users: n("select count(*) as n from users"),
    tokens: n("select count(*) as n from api_tokens where revoked_at is null"),
    auditEntries: n("select count(*) as n from audit_log"),
  };
}
