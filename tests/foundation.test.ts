import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@/lib/config";
import { getGovernance, getStoreDb, openStoreReaderWithCore, storeDir } from "@/lib/db/connection";
import { createStore, describeStore, ensureCoreStore, openStore } from "@/lib/stores/stores";
import { listStoreNames } from "@/lib/db/store-names";
import { createUser, ensureFirstAdmin, setUserPassword, signInWithPassword } from "@/lib/backend/users";
import { createApiToken, revokeApiToken, verifyApiToken } from "@/lib/auth/tokens";
import { appendAudit, verifyAuditChain } from "@/lib/governance/audit";
import { bootstrapApp } from "@/lib/bootstrap";
import { useTempDataDir } from "./helpers";

describe("config", () => {
  it("works with nothing set", () => {
    const c = parseConfig({});
    expect(c.host).toBe("127.0.0.1");
    expect(c.port).toBe(3000);
    expect(c.dataDir).toBe(path.resolve("./data"));
    expect(c.maxBodyBytes).toBe(1024 * 1024);
  });

  it("names the variable that is wrong", () => {
    expect(() => parseConfig({ PORT: "eighty" })).toThrow(ConfigError);
    try {
      parseConfig({ PORT: "99999", DUALMIND_BOOTSTRAP_TOKEN: "short" });
    } catch (e) {
      const msg = (e as Error).message;
      expect(msg).toContain("PORT");
      expect(msg).toContain("DUALMIND_BOOTSTRAP_TOKEN");
    }
  });
});

describe("databases and stores", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
  });
  afterEach(() => env.cleanup());

  it("opens governance.db with WAL, foreign keys, busy timeout and migrations applied", () => {
    const { sqlite, file } = getGovernance();
    expect(file).toBe(path.join(env.dataDir, "governance.db"));
    expect(sqlite.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(sqlite.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(sqlite.pragma("busy_timeout", { simple: true })).toBe(5000);
    expect(sqlite.pragma("synchronous", { simple: true })).toBe(1); // NORMAL
    const version = sqlite.prepare("select value from meta where key='schema_version'").get() as { value: string };
    expect(version.value).toMatch(/^\d{4}_/);
    const tables = (sqlite.prepare("select name from sqlite_master where type='table'").all() as { name: string }[]).map((r) => r.name);
    expect(tables).toEqual(expect.arrayContaining(["users", "api_tokens", "audit_log", "meta"]));
  });

  it("creates a store on first open, with sqlite-vec loaded", () => {
    const h = getStoreDb({ store: "photography" });
    expect(fs.existsSync(path.join(env.dataDir, "stores", "photography", "index.db"))).toBe(true);
    expect(fs.existsSync(path.join(env.dataDir, "stores", "photography", "memory"))).toBe(true);
    expect(h.vectors.available).toBe(true);
    const d = describeStore({ handle: getStoreDb({ store: "photography" }) });
    expect(d.vectors.version).toMatch(/^v0\./);
    expect(d.files.index_bytes).toBeGreaterThan(0);
  });

  it("never lets a bad store name reach a path", () => {
    for (const bad of ["../etc", "a/b", "", "UPPER", ".hidden", "a".repeat(64), "x\0y"]) {
      expect(() => storeDir(bad)).toThrow();
      expect(() => createStore({ input: { name: bad }, actor: "test" })).toThrow();
    }
    expect(fs.existsSync(path.join(env.dataDir, "etc"))).toBe(false);
  });

  it("bootstrap makes core, default and the first admin; creating an existing store conflicts", async () => {
    await bootstrapApp();
    expect(listStoreNames()).toEqual(["core", "default"]);
    createStore({ input: { name: "sysadmin", description: "ops notes" }, actor: "test" });
    expect(listStoreNames()).toEqual(["core", "default", "sysadmin"]);
    expect(describeStore({ handle: getStoreDb({ store: "sysadmin" }) }).description).toBe("ops notes");
    expect(() => createStore({ input: { name: "sysadmin" }, actor: "test" })).toThrow(/already exists/);
    expect(() => openStore({ store: "nope" })).toThrow(/does not exist/);
  });

  it("attaches core read-only: reads work, writes through it fail", () => {
    ensureCoreStore();
    getStoreDb({ store: "core" }).sqlite.exec("create table facts(x text); insert into facts values ('core fact')");
    const reader = openStoreReaderWithCore({ handle: getStoreDb({ store: "work" }), core: getStoreDb({ store: "core" }) });
    try {
      expect(reader.prepare("select x from core.facts").get()).toEqual({ x: "core fact" });
      expect(() => reader.exec("insert into core.facts values ('sneaky')")).toThrow(/readonly/i);
    } finally {
      reader.close();
    }
    expect(getStoreDb({ store: "core" }).sqlite.prepare("select count(*) as n from facts").get()).toEqual({ n: 1 });
  });
});

const signIn = (username: string, password: string) => signInWithPassword({ username, password, address: null });

describe("people and agents", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
  });
  afterEach(() => env.cleanup());

  it("first run creates admin once, with the configured or a generated password", async () => {
    const first = await ensureFirstAdmin({});
    expect(first.created).toBe(true);
    if (!first.created) return;
    expect(first.generatedPassword).toBeTruthy();
    expect(await signIn("admin", first.generatedPassword!)).toMatchObject({ ok: true, user: { role: "admin" } });
    expect((await ensureFirstAdmin({ configuredPassword: "another-password" })).created).toBe(false);
  });

  it("stores passwords hashed and rejects wrong ones", async () => {
    await createUser({ input: { username: "vera", password: "correct horse", role: "viewer" }, actor: "test" });
    const row = getGovernance().sqlite.prepare("select password_hash from users where username='vera'").get() as { password_hash: string };
    expect(row.password_hash).toMatch(/^scrypt\$/);
    expect(row.password_hash).not.toContain("correct horse");
    expect(await signIn("vera", "wrong horse")).toEqual({ ok: false, reason: "invalid" });
    expect(await signIn("nobody", "correct horse")).toEqual({ ok: false, reason: "invalid" });
    await setUserPassword({ username: "vera", password: "battery staple", actor: "test" });
    expect(await signIn("vera", "correct horse")).toEqual({ ok: false, reason: "invalid" });
    expect(await signIn("vera", "battery staple")).toMatchObject({ ok: true, user: { username: "vera" } });
  });

  it("tokens: shown once, stored as a hash, revocable, last_used recorded", () => {
    const { token, info } = createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read", "write"], stores: ["default"] }, actor: "test" });
    expect(token).toMatch(/^dm_[A-Za-z0-9_-]{40,}$/);
    const raw = fs.readFileSync(path.join(env.dataDir, "governance.db"));
    getGovernance().sqlite.pragma("wal_checkpoint(TRUNCATE)");
    expect(raw.includes(Buffer.from(token))).toBe(false);
    expect(fs.readFileSync(path.join(env.dataDir, "governance.db")).includes(Buffer.from(token))).toBe(false);
    const p = verifyApiToken({ token });
    expect(p).toMatchObject({ agentId: "claude", scopes: ["read", "write"], stores: ["default"] });
    const used = getGovernance().sqlite.prepare("select last_used_at from api_tokens where id=?").get(info.id) as { last_used_at: number };
    expect(used.last_used_at).toBeGreaterThan(0);
    revokeApiToken({ id: info.id, actor: "test" });
    expect(verifyApiToken({ token })).toBeNull();
    expect(verifyApiToken({ token: "dm_not-a-real-token" })).toBeNull();
  });

  it("a token revoked by another process (the CLI, a second server) is refused on the very next request", () => {
    const { token, info } = createApiToken({ input: { label: "ci", agent_id: "ci-bot", scopes: ["read"] }, actor: "test" });
    for (let i = 0; i < 3; i++) expect(verifyApiToken({ token })).toMatchObject({ agentId: "ci-bot" }); // the lookup's statement is warm
    const other = new Database(path.join(env.dataDir, "governance.db"));
    other.prepare("update api_tokens set revoked_at = ? where id = ?").run(Date.now(), info.id);
    other.close();
    expect(verifyApiToken({ token })).toBeNull();
  });

  it("a token changed through this server's own connection (allow-list narrowed, scopes cut, revoked by hand) counts on the very next request", () => {
    const { token, info } = createApiToken({ input: { label: "kept", agent_id: "kept-bot", scopes: ["read", "write"], stores: null }, actor: "test" });
    for (let i = 0; i < 3; i++) expect(verifyApiToken({ token })).toMatchObject({ stores: null, scopes: ["read", "write"] });
    const own = getGovernance().sqlite;
    own.prepare("update api_tokens set stores = ? where id = ?").run(JSON.stringify(["default"]), info.id);
    expect(verifyApiToken({ token })).toMatchObject({ stores: ["default"], scopes: ["read", "write"] });
    own.prepare("update api_tokens set scopes = ? where id = ?").run(JSON.stringify(["read"]), info.id);
    expect(verifyApiToken({ token })).toMatchObject({ stores: ["default"], scopes: ["read"] });
    own.prepare("update api_tokens set revoked_at = ? where id = ?").run(Date.now(), info.id);
    expect(verifyApiToken({ token })).toBeNull();
  });

  it("audit log is a hash chain that detects tampering", () => {
    for (let i = 0; i < 5; i++) appendAudit({ actor: "test", action: "thing.do", target: `t:${i}` });
    expect(verifyAuditChain()).toEqual({ ok: true, entries: 5 });
    // Tamper with a middle row using an independent connection.
    const db = new Database(path.join(env.dataDir, "governance.db"));
    db.prepare("update audit_log set actor = 'mallory' where id = 3").run();
    db.close();
    const v = verifyAuditChain();
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.brokenAtId).toBe(3);
  });

  it("every mutating auth action leaves an audit row", async () => {
    await createUser({ input: { username: "ann", password: "password1", role: "admin" }, actor: "user:root" });
    const { info } = createApiToken({ input: { label: "x", agent_id: "a", scopes: ["read"] }, actor: "user:ann" });
    revokeApiToken({ id: info.id, actor: "user:ann" });
    const actions = (getGovernance().sqlite.prepare("select action, actor from audit_log order by id").all() as { action: string; actor: string }[]);
    expect(actions).toEqual([
      { action: "user.create", actor: "user:root" },
      { action: "token.create", actor: "user:ann" },
      { action: "token.revoke", actor: "user:ann" },
    ]);
  });
});
