/**
 * Who may sign in and act, as one comparable string: users (with role and
 * password hash), tokens (and how many are revoked) and the audit log, which
 * every mutating path appends to. Both the reliability suite (through the
 * connection registry) and the Playwright specs (a read-only handle on the
 * server's file) use it; the metrics loop writes snapshot tables meanwhile,
 * so those are left out on purpose.
 */
export function identitySnapshot(db: { prepare(sql: string): { get(): unknown } }): string {
  const one = (sql: string) => JSON.stringify(db.prepare(sql).get());
  return [
    one("select count(*) n, group_concat(username || ':' || role || ':' || password_hash) u from users"),
    one("select count(*) n, count(revoked_at) revoked from api_tokens"),
    one("select count(*) n, max(id) last from audit_log"),
  ].join(" ");
}

/**
 * The same on either backend, through an async runner of SQL both dialects
 * share (tests/backend.ts governanceSql): the suite's files that also run
 * on PostgreSQL compare this one.
 */
export async function identitySnapshotOf(run: (sql: string) => Promise<unknown[]>): Promise<string> {
  return JSON.stringify([
    await run("select username, role, password_hash from users order by username"),
    await run("select cast(count(*) as integer) as n, cast(count(revoked_at) as integer) as revoked from api_tokens"),
    await run("select cast(count(*) as integer) as n, cast(max(id) as integer) as last from audit_log"),
  ]);
}
