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
