import type { Session } from "next-auth";
import type { JWT } from "next-auth/jwt";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getAuthOptions } from "@/lib/backend/auth-options";
import { resolveSessionUser } from "@/lib/backend/users";
import { roleAtLeast } from "@/lib/auth/users";
import { governance } from "@/lib/backend/governance";
import { createUser, setUserPassword, signInWithPassword } from "@/lib/backend/users";
import { spawnCli } from "./fixtures/cli";
import { governanceSql, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

let env: TestEnv;
beforeEach(async () => {
  // No start-up: root is the only admin, so the last-admin rules apply to it.
  env = await useTestBackend({}, { bootstrap: false, migrated: true });
  await createUser({ input: { username: "root", password: "root-password", role: "admin" }, actor: "test" });
  await createUser({ input: { username: "vera", password: "vera-password", role: "viewer" }, actor: "test" });
});
afterEach(() => env.cleanup());

/** The claims a session JWT for `username` carries when issued now (what the jwt callback writes at sign-in). */
async function claimsNow(username: string): Promise<{ uid: number; role: string; sv: number; name: string }> {
  const u = (await governance().getUserByUsername({ username }))!;
  return { uid: u.id, role: u.role, sv: u.sessionVersion, name: u.username };
}

async function auditActions(): Promise<string[]> {
  return (await governanceSql<{ action: string }>("select action from audit_log order by id")).map((r) => r.action);
}
const setUserRole = (a: { username: string; role: "viewer" | "editor" | "admin"; actor: string }) => governance().setUserRole(a);
const setUserDisabled = (a: { username: string; disabled: boolean; actor: string }) => governance().setUserDisabled(a);

describe("session versions", () => {
  it("a password reset, a role change and a disable each end the sessions issued before them, in one audited transaction", async () => {
    const changes: [string, () => unknown, string][] = [
      ["password reset", () => setUserPassword({ username: "vera", password: "vera-password-2", actor: "user:root" }), "user.password_reset"],
      ["role change", () => setUserRole({ username: "vera", role: "admin", actor: "user:root" }), "user.role"],
      ["disable", () => setUserDisabled({ username: "vera", disabled: true, actor: "user:root" }), "user.disable"],
    ];
    for (const [name, change, action] of changes) {
      const before = await claimsNow("vera");
      expect((await resolveSessionUser({ claims: before }))?.username, name).toBe("vera");
      const auditBefore = (await auditActions()).length;
      await change();
      expect(await resolveSessionUser({ claims: before }), `${name}: the old session must end`).toBeNull();
      expect((await claimsNow("vera")).sv, name).toBe(before.sv + 1);
      expect((await auditActions()).slice(auditBefore), name).toEqual([action]);
    }
    // Root's own session is untouched by changes to vera.
    expect((await resolveSessionUser({ claims: await claimsNow("root") }))?.username).toBe("root");
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("a refused change bumps nothing and audits nothing; repeating the current role or state changes nothing", async () => {
    const root = await claimsNow("root");
    const audits = (await auditActions()).length;
    await expect(setUserRole({ username: "root", role: "viewer", actor: "test" })).rejects.toThrow(/last admin/);
    await expect(setUserDisabled({ username: "root", disabled: true, actor: "test" })).rejects.toThrow(/last active admin/);
    await setUserRole({ username: "root", role: "admin", actor: "test" });
    await setUserDisabled({ username: "root", disabled: false, actor: "test" });
    expect((await resolveSessionUser({ claims: root }))?.username).toBe("root");
    expect(await auditActions()).toHaveLength(audits);
    await expect(setUserDisabled({ username: "ghost", disabled: true, actor: "test" })).rejects.toThrow(/no user ghost/);
  });

  it("a token without a session version, or with another one, is refused", async () => {
    const { uid, role, sv, name } = await claimsNow("vera");
    expect(await resolveSessionUser({ claims: { uid, role, name } })).toBeNull();
    expect(await resolveSessionUser({ claims: { uid, role, sv: sv + 1, name } })).toBeNull();
    expect(await resolveSessionUser({ claims: { uid, role, sv: String(sv), name } })).toBeNull();
    // A cookie for another person at the same id (a users table replaced under the same secret) is no session.
    expect(await resolveSessionUser({ claims: { uid, role, sv, name: "someone-else" } })).toBeNull();
    expect(await resolveSessionUser({ claims: { uid, role, sv } })).toBeNull();
    expect((await resolveSessionUser({ claims: { uid, role, sv, name } }))?.username).toBe("vera");
  });

  it("disable refuses sign-in; enable lets the person sign in again but does not revive sessions from before", async () => {
    const old = await claimsNow("vera");
    await setUserDisabled({ username: "vera", disabled: true, actor: "user:root" });
    expect(await signInWithPassword({ username: "vera", password: "vera-password", address: null })).toEqual({ ok: false, reason: "invalid" });
    const user = await setUserDisabled({ username: "vera", disabled: false, actor: "user:root" });
    expect(user.disabledAt).toBeNull();
    expect(await resolveSessionUser({ claims: old })).toBeNull();
    const again = await signInWithPassword({ username: "vera", password: "vera-password", address: null });
    expect(again.ok && (await resolveSessionUser({ claims: { uid: again.user.id, sv: again.user.sessionVersion, name: again.user.username } }))?.username).toBe("vera");
    expect((await auditActions()).slice(-2)).toEqual(["user.disable", "user.enable"]);
  });

  it("next-auth callbacks: the JWT carries sv from sign-in; a revoked token's session has no user", async () => {
    const { callbacks } = getAuthOptions();
    const signedIn = await signInWithPassword({ username: "vera", password: "vera-password", address: null });
    if (!signedIn.ok) throw new Error("sign-in failed");
    const user = { id: String(signedIn.user.id), name: "vera", role: "viewer", sv: signedIn.user.sessionVersion };
    const token = (await callbacks!.jwt!({ token: {}, user, account: null } as never)) as JWT;
    expect(token).toMatchObject({ uid: signedIn.user.id, role: "viewer", sv: 0, name: "vera" });
    const session = (extra: JWT) => callbacks!.session!({ session: { user: { name: "vera" }, expires: "2030-01-01T00:00:00.000Z" }, token: extra } as never) as Promise<Session>;
    expect((await session(token)).user).toMatchObject({ id: signedIn.user.id, role: "viewer", sv: 0 });
    await setUserPassword({ username: "vera", password: "vera-password-2", actor: "user:root" });
    expect(await session(token)).toEqual({ expires: "2030-01-01T00:00:00.000Z" });
  });
});

describe("CLI users disable / enable", () => {
  const cli = (...args: string[]) => spawnCli({ args, env: { DATA_DIR: env.dataDir, DUALMIND_LOG_LEVEL: "warn" } });

  it("disables and enables a user (ending sessions, audited), refuses the last admin, and lists both in --help", async () => {
    const old = await claimsNow("vera");
    const disabled = cli("users", "disable", "vera", "--json");
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(JSON.parse(disabled.stdout)).toEqual({ username: "vera", disabled: true });
    expect(cli("users", "list").stdout).toMatch(/^vera\tviewer\t.*\tdisabled$/m);
    expect(cli("users", "enable", "vera").stdout.trim()).toBe("vera is enabled");
    expect(await resolveSessionUser({ claims: old })).toBeNull();
    expect((await resolveSessionUser({ claims: await claimsNow("vera") }))?.username).toBe("vera");
    expect((await auditActions()).slice(-2)).toEqual(["user.disable", "user.enable"]);
    const lastAdmin = cli("users", "disable", "root");
    expect(lastAdmin.code).toBe(2);
    expect(lastAdmin.stderr).toContain("cannot disable the last active admin");
    const help = cli("--help").stdout;
    expect(help).toContain("users disable <username>");
    expect(help).toContain("users enable <username>");
    // Each call starts a node; on a loaded machine that alone can take seconds.
  }, patience(120_000));

  it("an editor sits between viewer and admin: created, signed in, promoted, never an admin's equal", async () => {
    const ed = await createUser({ input: { username: "eddie", password: "eddie-password", role: "editor" }, actor: "test" });
    expect(ed.role).toBe("editor");
    expect((await resolveSessionUser({ claims: await claimsNow("eddie") }))?.role).toBe("editor");
    expect([roleAtLeast({ role: "editor", min: "viewer" }), roleAtLeast({ role: "editor", min: "editor" }), roleAtLeast({ role: "editor", min: "admin" })]).toEqual([true, true, false]);
    expect([roleAtLeast({ role: "viewer", min: "editor" }), roleAtLeast({ role: "admin", min: "editor" })]).toEqual([false, true]);
    const before = await claimsNow("eddie");
    await setUserRole({ username: "eddie", role: "admin", actor: "user:root" });
    expect(await resolveSessionUser({ claims: before })).toBeNull();
    expect((await resolveSessionUser({ claims: await claimsNow("eddie") }))?.role).toBe("admin");
  });
});
