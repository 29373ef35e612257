import { randomBytes, scryptSync } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ADDRESS_THROTTLE, clientAddress, FAILURE_MEMORY_MS, USER_THROTTLE } from "@/lib/auth/login-throttle";
import { hashPassword, verifyPassword } from "@/lib/auth/passwords";
import { governance } from "@/lib/backend/governance";
import { createUser, setUserPassword, signInWithPassword, type SignInResult } from "@/lib/backend/users";
import { ConfigError, parseConfig } from "@/lib/config";
import { closeAllDatabases } from "@/lib/db/connection";
import { closePg } from "@/lib/db/pg";
import { governanceSql, useTestBackend, type TestEnv } from "./backend";

// Count real scrypt runs: a throttled attempt must not cost one.
const scryptRuns = vi.hoisted(() => ({ count: 0 }));
vi.mock("node:crypto", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:crypto")>();
  const scrypt = ((...args: Parameters<typeof actual.scrypt>) => {
    scryptRuns.count++;
    return (actual.scrypt as (...a: unknown[]) => void)(...args);
  }) as typeof actual.scrypt;
  return { ...actual, default: { ...actual, scrypt }, scrypt };
});

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend({}, { bootstrap: false, migrated: true });
  await createUser({ input: { username: "alice", password: "alice-password", role: "viewer" }, actor: "test" });
  await createUser({ input: { username: "root", password: "root-password", role: "admin" }, actor: "test" });
  scryptRuns.count = 0;
});
afterEach(() => env.cleanup());

const T0 = Date.UTC(2030, 0, 1);
const SEC = 1000;
const MIN = 60 * SEC;

function attempt(username: string, password: string, at: number, address: string | null = null): Promise<SignInResult> {
  return signInWithPassword({ username, password, address, now: at });
}

function lockoutAudits(): Promise<{ target: string }[]> {
  return governanceSql<{ target: string }>("select target from audit_log where action = 'auth.lockout' order by id");
}

/** Immediates that ran while `work` was pending: zero when it held the event loop the whole time. */
async function immediatesDuring<T>(work: () => Promise<T> | T): Promise<number> {
  let ticks = 0;
  let done = false;
  const spin = () => {
    if (done) return;
    ticks++;
    setImmediate(spin);
  };
  setImmediate(spin);
  await work();
  done = true;
  return ticks;
}

describe("password hashing", () => {
  it("hashes and verifies off the event loop: other work runs while scrypt does", async () => {
    let stored = "";
    expect(await immediatesDuring(async () => (stored = await hashPassword("correct horse")))).toBeGreaterThan(0);
    let ok = false;
    expect(await immediatesDuring(async () => (ok = await verifyPassword({ password: "correct horse", stored })))).toBeGreaterThan(0);
    expect(ok).toBe(true);
    expect(await verifyPassword({ password: "wrong horse", stored })).toBe(false);
  });

  it("keeps the stored format: a hash written by the old synchronous code still verifies; NUL never matches", async () => {
    const salt = randomBytes(16);
    const old = `scrypt$16384$8$1$${salt.toString("base64")}$${scryptSync("battery staple", salt, 32, { N: 16384, r: 8, p: 1 }).toString("base64")}`;
    expect(await verifyPassword({ password: "battery staple", stored: old })).toBe(true);
    expect(await hashPassword("battery staple")).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(await verifyPassword({ password: "battery staple\u0000", stored: old })).toBe(false);
    expect(await verifyPassword({ password: "battery staple", stored: "scrypt$0$8$1$AAAA$AAAA" })).toBe(false);
    expect(await verifyPassword({ password: "battery staple", stored: "not-a-hash" })).toBe(false);
  });
});

describe("sign-in throttle (per name)", () => {
  it("five wrong passwords are answered; the sixth attempt waits 30 s without running scrypt, even with the right password", async () => {
    for (let i = 0; i < USER_THROTTLE.freeFailures; i++) expect(await attempt("alice", `guess-${i}`, T0 + i * SEC)).toEqual({ ok: false, reason: "invalid" });
    const runs = scryptRuns.count;
    const last = T0 + 4 * SEC;
    expect(await attempt("alice", "guess-6", last + SEC)).toEqual({ ok: false, reason: "throttled", retryAfterMs: 29 * SEC });
    expect(await attempt("alice", "alice-password", last + 10 * SEC)).toEqual({ ok: false, reason: "throttled", retryAfterMs: 20 * SEC });
    expect(scryptRuns.count).toBe(runs);
    // Waiting it out works, and a success forgets the failures.
    expect((await attempt("alice", "alice-password", last + 30 * SEC)).ok).toBe(true);
    expect(await governanceSql("select key from login_throttle where key = 'user:alice'")).toEqual([]);
    for (let i = 0; i < USER_THROTTLE.freeFailures; i++) expect((await attempt("alice", "nope", last + MIN + i)).ok).toBe(false);
  });

  it("the delay doubles; the tenth failure locks the name for 15 min (audited once); the right password is refused until the lock ends", async () => {
    // Each wrong guess at the earliest moment allowed; a refusal is not charged, so waiting it out is free.
    let at = T0;
    let failures = 0;
    const waits: number[] = [];
    while (failures < USER_THROTTLE.lockAfterFailures) {
      const r = await attempt("alice", "wrong", at);
      if (!r.ok && r.reason === "throttled") {
        waits.push(r.retryAfterMs);
        at += r.retryAfterMs;
      } else failures++;
    }
    expect(waits).toEqual([30 * SEC, 60 * SEC, 2 * MIN, 4 * MIN, 8 * MIN]);
    const lockedAt = at;
    expect(await attempt("alice", "alice-password", lockedAt)).toEqual({ ok: false, reason: "throttled", retryAfterMs: 15 * MIN });
    expect(await lockoutAudits()).toEqual([{ target: "user:alice" }]);
    const runs = scryptRuns.count;
    expect(await attempt("alice", "alice-password", lockedAt + 14 * MIN)).toEqual({ ok: false, reason: "throttled", retryAfterMs: MIN });
    expect(scryptRuns.count).toBe(runs);
    // One more failure after the lock ends locks it again, audited again.
    expect(await attempt("alice", "still-wrong", lockedAt + 15 * MIN)).toEqual({ ok: false, reason: "invalid" });
    expect(await attempt("alice", "alice-password", lockedAt + 16 * MIN)).toMatchObject({ reason: "throttled" });
    expect(await lockoutAudits()).toHaveLength(2);
    expect((await attempt("alice", "alice-password", lockedAt + 31 * MIN)).ok).toBe(true);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("a name that does not exist gets exactly the answers a real one gets", async () => {
    const answers = async (username: string) => {
      const out: SignInResult[] = [];
      for (let i = 0; i < USER_THROTTLE.lockAfterFailures + 2; i++) out.push(await attempt(username, "wrong", T0 + i * 20 * MIN));
      out.push(await attempt(username, "wrong", T0 + 11 * 20 * MIN + 1));
      return out;
    };
    expect(await answers("nobody-here")).toEqual(await answers("alice"));
  });

  it("a burst of parallel guesses: at most five reach scrypt, the rest are refused at once", async () => {
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => attempt("alice", `guess-${i}`, T0)));
    expect(results.filter((r) => !r.ok && r.reason === "invalid")).toHaveLength(USER_THROTTLE.freeFailures);
    expect(results.filter((r) => !r.ok && r.reason === "throttled")).toHaveLength(30 - USER_THROTTLE.freeFailures);
    expect(scryptRuns.count).toBe(USER_THROTTLE.freeFailures);
  });

  it("is kept in the ledger (governance.db, or PostgreSQL): a restarted process (or a second server on this data) sees the same lock", async () => {
    let at = T0;
    for (let i = 0; i < USER_THROTTLE.lockAfterFailures; i++, at += 10 * MIN) await attempt("alice", "wrong", at);
    closeAllDatabases();
    await closePg();
    expect(await attempt("alice", "alice-password", at)).toMatchObject({ ok: false, reason: "throttled" });
  });

  it("failures are forgotten an hour after the last one", async () => {
    for (let i = 0; i < USER_THROTTLE.freeFailures; i++) await attempt("alice", "wrong", T0);
    expect(await attempt("alice", "alice-password", T0 + 10 * SEC)).toMatchObject({ reason: "throttled" });
    expect((await attempt("alice", "alice-password", T0 + FAILURE_MEMORY_MS)).ok).toBe(true);
  });

  it("a password reset and enabling the account let the person straight back in", async () => {
    let at = T0;
    for (let i = 0; i < USER_THROTTLE.lockAfterFailures; i++, at += 10 * MIN) await attempt("alice", "wrong", at);
    await setUserPassword({ username: "alice", password: "new-alice-password", actor: "test" });
    expect((await attempt("alice", "new-alice-password", at)).ok).toBe(true);
    for (let i = 0; i < USER_THROTTLE.freeFailures; i++) await attempt("alice", "wrong", at);
    await governance().setUserDisabled({ username: "alice", disabled: true, actor: "test" });
    // Disabled: the right password is just a failure, like any other.
    expect(await attempt("alice", "new-alice-password", at + 10 * MIN)).toEqual({ ok: false, reason: "invalid" });
    await governance().setUserDisabled({ username: "alice", disabled: false, actor: "test" });
    expect((await attempt("alice", "new-alice-password", at + 10 * MIN)).ok).toBe(true);
  });
});

describe("sign-in throttle (names that are no account)", () => {
  it("a name that is no account is slowed and locked exactly like a real one, but its lock writes no audit row (sprayed names cannot grow the log)", async () => {
    const run = async (username: string) => {
      let at = T0;
      const seen: string[] = [];
      for (let failures = 0; failures < USER_THROTTLE.lockAfterFailures; ) {
        const r = await attempt(username, "wrong", at);
        if (!r.ok && r.reason === "throttled") {
          seen.push(`wait ${r.retryAfterMs}`);
          at += r.retryAfterMs;
        } else {
          seen.push(r.ok ? "ok" : r.reason);
          failures++;
        }
      }
      seen.push(JSON.stringify(await attempt(username, "wrong", at)));
      return seen;
    };
    // The same answers, step by step, for an account and for a name nobody has.
    expect(await run("ghost-name")).toEqual(await run("alice"));
    expect(await lockoutAudits()).toEqual([{ target: "user:alice" }]);
  });
});

describe("sign-in throttle (per address)", () => {
  it("one address trying many names is slowed after 20 failures and locked at 30; other addresses and the names themselves are untouched", async () => {
    const addr = "198.51.100.7";
    let at = T0;
    for (let i = 0; i < ADDRESS_THROTTLE.freeFailures; i++) expect(await attempt(`name-${i}`, "wrong", at, addr)).toEqual({ ok: false, reason: "invalid" });
    expect(await attempt("alice", "alice-password", at + SEC, addr)).toEqual({ ok: false, reason: "throttled", retryAfterMs: 29 * SEC });
    expect((await attempt("alice", "alice-password", at + SEC, "198.51.100.8")).ok).toBe(true);
    for (let i = ADDRESS_THROTTLE.freeFailures; i < ADDRESS_THROTTLE.lockAfterFailures; i++) {
      at += 15 * MIN;
      expect(await attempt(`name-${i}`, "wrong", at, addr)).toEqual({ ok: false, reason: "invalid" });
    }
    expect(await lockoutAudits()).toEqual([{ target: `ip:${addr}` }]);
    expect(await attempt("root", "root-password", at + 14 * MIN, addr)).toEqual({ ok: false, reason: "throttled", retryAfterMs: MIN });
  });

  it("a success from an address does not wipe the failures it made under other names", async () => {
    const addr = "198.51.100.9";
    for (let i = 0; i < ADDRESS_THROTTLE.freeFailures - 1; i++) await attempt(`name-${i}`, "wrong", T0, addr);
    expect((await attempt("alice", "alice-password", T0, addr)).ok).toBe(true);
    await attempt("name-x", "wrong", T0, addr);
    expect(await attempt("alice", "alice-password", T0 + SEC, addr)).toMatchObject({ reason: "throttled" });
  });

  it("the address is taken from X-Forwarded-For only behind trusted proxies, counted from the right", () => {
    const cases: [string | string[] | undefined, number, string | null][] = [
      ["203.0.113.5", 0, null],
      [undefined, 1, null],
      ["", 1, null],
      ["203.0.113.5", 1, "203.0.113.5"],
      ["6.6.6.6, 203.0.113.5", 1, "203.0.113.5"],
      ["6.6.6.6, 203.0.113.5, 10.0.0.2", 2, "203.0.113.5"],
      ["203.0.113.5", 3, "203.0.113.5"],
      [["6.6.6.6", "203.0.113.5"], 1, "203.0.113.5"],
      ["::ffff:203.0.113.5", 1, "203.0.113.5"],
      ["[2001:DB8::1]:443", 1, "2001:db8::1"],
      ["not-an-address", 1, "invalid"],
      ["x".repeat(5000), 1, "invalid"],
    ];
    for (const [forwardedFor, trustProxyHops, expected] of cases) expect(clientAddress({ forwardedFor, trustProxyHops }), JSON.stringify([forwardedFor, trustProxyHops])).toBe(expected);
  });

  it("DUALMIND_TRUST_PROXY: false by default, true = 1 proxy, a count, anything else named in the error", () => {
    expect(parseConfig({}).trustProxyHops).toBe(0);
    expect(parseConfig({ DUALMIND_TRUST_PROXY: "true" }).trustProxyHops).toBe(1);
    expect(parseConfig({ DUALMIND_TRUST_PROXY: "false" }).trustProxyHops).toBe(0);
    expect(parseConfig({ DUALMIND_TRUST_PROXY: "2" }).trustProxyHops).toBe(2);
    expect(() => parseConfig({ DUALMIND_TRUST_PROXY: "yes please" })).toThrow(ConfigError);
    expect(() => parseConfig({ DUALMIND_TRUST_PROXY: "yes please" })).toThrow(/DUALMIND_TRUST_PROXY/);
  });
});
