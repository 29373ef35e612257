import { pgEngine } from "@/lib/db/engine";
import { describe, expect, it } from "vitest";
import { USER_THROTTLE } from "@/lib/auth/login-throttle";
import { governanceOn } from "@/lib/backend/governance";
import { createUser, resolveSessionUser, signInWithPassword } from "@/lib/backend/users";
import { useTwoReplicas } from "./helpers";

/**
 * Two app replicas (two pools) on one PostgreSQL: a person made on one signs
 * in on the other, and the login throttle counts attempts on both as one.
 */
describe("users and the login throttle across two replicas", () => {
  const replicas = useTwoReplicas();
  const T0 = Date.UTC(2030, 0, 1);

  it("a user created on replica A signs in on replica B; a password change on B ends A's session", async () => {
    const a = governanceOn(pgEngine(replicas.a()));
    const b = governanceOn(pgEngine(replicas.b()));
    const made = await createUser({ input: { username: "ana", password: "ana-password", role: "editor" }, actor: "test", backend: a });
    const onB = await signInWithPassword({ username: "ana", password: "ana-password", address: null, now: T0, backend: b });
    expect(onB.ok && onB.user.id).toBe(made.id);
    const claims = { uid: made.id, sv: made.sessionVersion, name: made.username };
    expect((await resolveSessionUser({ claims, backend: a }))?.role).toBe("editor");
    await b.setUserPasswordHash({ username: "ana", passwordHash: (await a.getUserByUsername({ username: "ana" }))!.passwordHash, actor: "test" });
    expect(await resolveSessionUser({ claims, backend: a })).toBeNull();
  });

  it("failures alternating between replicas count as one: the sixth attempt is refused on either", async () => {
    const a = governanceOn(pgEngine(replicas.a()));
    const b = governanceOn(pgEngine(replicas.b()));
    await createUser({ input: { username: "bo", password: "bo-password", role: "viewer" }, actor: "test", backend: a });
    for (let i = 0; i < USER_THROTTLE.freeFailures; i++) {
      const backend = i % 2 === 0 ? a : b;
      expect(await signInWithPassword({ username: "bo", password: "wrong-password", address: null, now: T0 + i, backend })).toEqual({ ok: false, reason: "invalid" });
    }
    expect(await signInWithPassword({ username: "bo", password: "bo-password", address: null, now: T0 + 10, backend: a })).toMatchObject({ ok: false, reason: "throttled" });
    expect(await signInWithPassword({ username: "bo", password: "bo-password", address: null, now: T0 + 10, backend: b })).toMatchObject({ ok: false, reason: "throttled" });
  });

  it("a burst of parallel guesses spread over both replicas lets at most the free failures through", async () => {
    const a = governanceOn(pgEngine(replicas.a()));
    const b = governanceOn(pgEngine(replicas.b()));
    await createUser({ input: { username: "cy", password: "cy-password", role: "viewer" }, actor: "test", backend: b });
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signInWithPassword({ username: "cy", password: `guess-${i}-password`, address: "203.0.113.7", now: T0, backend: i % 2 === 0 ? a : b })),
    );
    expect(burst.filter((r) => !r.ok && r.reason === "invalid")).toHaveLength(USER_THROTTLE.freeFailures);
    expect(burst.filter((r) => !r.ok && r.reason === "throttled")).toHaveLength(12 - USER_THROTTLE.freeFailures);
    expect((await a.verifyAuditChain({})).ok).toBe(true);
  });
});
