import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createTokenAction, createUserAction, revokeTokenAction } from "@/app/(dashboard)/admin/actions";
import { governance } from "@/lib/backend/governance";
import { AppError } from "@/lib/errors";
import { actionError, formValues } from "@/lib/http/action-result";
import { stores } from "@/lib/stores/backend";
import { seedStore, seedTrace, storeSql, useTestBackend, type TestEnv } from "./backend";

// The action-result module is for the server only; under vitest there is no React server condition to satisfy its guard.
vi.mock("server-only", () => ({}));
// A server action reads its caller from the session cookie (next-auth's getServerSession); here the test says who calls.
// Everything after that (re-reading the person from the ledger, the role check, the write, the audit) is the product's.
const caller = vi.hoisted(() => ({ session: null as null | { user: { id: number; role: string; sv: number; name: string } } }));
vi.mock("next-auth", async (importOriginal) => ({ ...(await importOriginal<typeof import("next-auth")>()), getServerSession: async () => caller.session }));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined }));

// Issue 18: forms wiped every field on an error and showed raw zod text ("Too big: expected number to be <=1").
describe("form errors a person can act on", () => {
  const settings = z.object({ min_score: z.number().max(1), top_k: z.number().int().min(1), label: z.string().trim().min(1), scopes: z.array(z.string()).min(1), agent: z.string().regex(/^a+$/, "letters a only") });

  it("zod's messages become short, human ones, keyed by field; a schema's own message is kept", () => {
    const r = settings.safeParse({ min_score: 2, top_k: 0, label: "", scopes: [], agent: "b" });
    const out = actionError({ error: r.error, values: { label: "", agent: "b" } });
    expect(out.fields).toEqual({
      min_score: "must be at most 1",
      top_k: "must be at least 1",
      label: "is required",
      scopes: "choose at least one",
      agent: "letters a only",
    });
    expect(out.error).toBe("Check the 5 fields marked below.");
    expect(JSON.stringify(out)).not.toMatch(/Too big|Too small|expected/);
    expect(out.values).toEqual({ label: "", agent: "b" });
  });

  it("a number that is not one says so", () => {
    const out = actionError({ error: z.object({ top_k: z.number() }).safeParse({ top_k: Number.NaN }).error });
    expect(out.fields).toEqual({ top_k: "must be a number" });
    expect(out.error).toBe("Check top k: it must be a number.");
  });

  it("a typed error that names a field marks that field", () => {
    const out = actionError({ error: new AppError("unprocessable", "no such store: x", [{ path: "stores", message: "no such store: x" }]) });
    expect(out).toMatchObject({ ok: false, error: "no such store: x", fields: { stores: "no such store: x" } });
  });

  it("the submitted values go back without passwords", () => {
    const form = new FormData();
    form.set("username", "dora");
    form.set("password", "hunter22-secret");
    form.append("scopes", "read");
    form.append("scopes", "write");
    expect(formValues({ form, secret: ["password"] })).toEqual({ username: "dora", scopes: ["read", "write"] });
  });
});

describe("token allow-lists and labels", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await useTestBackend();
  });
  afterEach(() => env.cleanup());
  const createApiToken = (a: Parameters<ReturnType<typeof governance>["createApiToken"]>[0]) => governance().createApiToken(a);

  it("a read-only token may not name a store that does not exist (it could never create it)", async () => {
    await expect(createApiToken({ input: { label: "r", agent_id: "reader", scopes: ["read"], stores: ["core", "no-such-store"] }, actor: "test" })).rejects.toThrow(
      /no such store: no-such-store \(a read-only token cannot create it\)/,
    );
    expect(await governance().listApiTokens({})).toHaveLength(0);
    await seedStore("notes");
    expect((await createApiToken({ input: { label: "r", agent_id: "reader", scopes: ["read"], stores: ["notes"] }, actor: "test" })).info.stores).toEqual(["notes"]);
  });

  it("a write token may name a store it will create", async () => {
    expect((await createApiToken({ input: { label: "w", agent_id: "writer", scopes: ["write"], stores: ["later"] }, actor: "test" })).info.stores).toEqual(["later"]);
  });

  it("a label an active token already has is numbered; a revoked token's label is free again", async () => {
    const a = (await createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" })).info;
    const b = (await createApiToken({ input: { label: "Laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" })).info;
    const c = (await createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" })).info;
    expect([a.label, b.label, c.label]).toEqual(["laptop", "Laptop (2)", "laptop (3)"]);
    await governance().revokeApiToken({ id: a.id, actor: "test" });
    expect((await createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" })).info.label).toBe("laptop");
  });
});

describe("admin server actions re-check the session and the role on every call", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await useTestBackend();
    caller.session = null;
  });
  afterEach(async () => {
    caller.session = null;
    await env.cleanup();
  });

  /** Sign `username` in as the jwt callback would: the claims of their row now. */
  const signInAs = async (username: string) => {
    const u = (await governance().getUserByUsername({ username }))!;
    caller.session = { user: { id: u.id, role: u.role, sv: u.sessionVersion, name: u.username } };
  };
  const form = (fields: Record<string, string | string[]>) => {
    const f = new FormData();
    for (const [k, v] of Object.entries(fields)) for (const one of [v].flat()) f.append(k, one);
    return f;
  };
  const newUser = form({ username: "mallory", password: "mallory-password", role: "admin" });

  it("no session, a viewer, an editor: refused and nothing written; an admin: created and audited under their name", async () => {
    expect(await createUserAction(null, newUser)).toMatchObject({ ok: false, error: "sign in first" });
    await governance().insertUser({ username: "vera", passwordHash: "x", role: "viewer", actor: "test" });
    await governance().insertUser({ username: "eddie", passwordHash: "x", role: "editor", actor: "test" });
    for (const who of ["vera", "eddie"]) {
      await signInAs(who);
      expect(await createUserAction(null, newUser), who).toMatchObject({ ok: false, error: "admins only" });
    }
    expect((await governance().listUsers({})).map((u) => u.username)).not.toContain("mallory");
    await signInAs("admin");
    expect(await createUserAction(null, newUser)).toMatchObject({ ok: true });
    expect(await governance().getUserByUsername({ username: "mallory" })).toMatchObject({ role: "admin" });
    expect((await governance().listAuditTail({ limit: 5 })).find((r) => r.action === "user.create")).toMatchObject({ actor: "user:admin" });
  });

  it("a session issued before a demotion is refused at the next action, though its cookie still says admin", async () => {
    await governance().insertUser({ username: "root2", passwordHash: "x", role: "admin", actor: "test" });
    await signInAs("root2");
    const created = await createTokenAction(null, form({ label: "ci", agent_id: "ci", scopes: "read", stores: "" }));
    expect(created).toMatchObject({ ok: true });
    await governance().setUserRole({ username: "root2", role: "viewer", actor: "user:admin" });
    const [token] = await governance().listApiTokens({});
    expect(await revokeTokenAction(null, form({ id: String(token.id) }))).toMatchObject({ ok: false, error: "sign in first" });
    expect((await governance().listApiTokens({})).find((t) => t.id === token.id)?.revoked_at ?? null).toBeNull();
    // Signed in again as the viewer they now are: still not an admin.
    await signInAs("root2");
    expect(await revokeTokenAction(null, form({ id: String(token.id) }))).toMatchObject({ ok: false, error: "admins only" });
  });

  it("a token's store list is checked against this backend's stores", async () => {
    await signInAs("admin");
    const typo = await createTokenAction(null, form({ label: "r", agent_id: "r", scopes: "read", stores: "nots" }));
    expect(typo).toMatchObject({ ok: false, fields: { stores: expect.stringContaining("no such store: nots") } });
    await seedStore("notes");
    expect(await createTokenAction(null, form({ label: "r", agent_id: "r", scopes: "read", stores: "notes" }))).toMatchObject({ ok: true });
  });
});

describe("which store a page opens on", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await useTestBackend();
  });
  afterEach(() => env.cleanup());

  it("a store with only its schema (or only scratchpad keys) is empty; a trace makes it not", async () => {
    await seedStore("alpha");
    const hasContent = () => stores().storeHasContent({ store: "alpha" });
    expect(await hasContent()).toBe(false);
    await storeSql("alpha", "insert into working_memory (key, value, updated_at, updated_by) values ('k', '1', 1, 't')");
    expect(await hasContent(), "a scratchpad key is not content").toBe(false);
    await seedTrace("alpha", { intent: { verb: "fix", target: "login" }, shard_type: "web", outcome: "success" }, "a");
    expect(await hasContent()).toBe(true);
  });
});
