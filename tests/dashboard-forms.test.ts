import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createApiToken, listApiTokens, revokeApiToken } from "@/lib/auth/tokens";
import { recordTrace } from "@/lib/recall/traces";
import { AppError } from "@/lib/errors";
import { actionError, formValues } from "@/lib/http/action-result";
import { createStore, ensureCoreStore, openStore, storeHasContent } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

// The action-result module is for the server only; under vitest there is no React server condition to satisfy its guard.
vi.mock("server-only", () => ({}));

// Issue 18: forms wiped every field on an error and showed raw zod text ("Too big: expected number to be <=1").
describe("form errors a person can act on", () => {
  const settings = z.object({ min_score: z.number().max(1), top_k: z.number().int().min(1), label: z.string().trim().min(1), scopes: z.array(z.string()).min(1), agent: z.string().regex(/^a+$/, "letters a only") });

  it("zod's messages become short, human ones, keyed by field; a schema's own message is kept", () => {
    const r = settings.safeParse({ min_score: 2, top_k: 0, label: "", scopes: [], agent: "b" });
    const out = actionError(r.error, { label: "", agent: "b" });
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
    const out = actionError(z.object({ top_k: z.number() }).safeParse({ top_k: Number.NaN }).error);
    expect(out.fields).toEqual({ top_k: "must be a number" });
    expect(out.error).toBe("Check top k: it must be a number.");
  });

  it("a typed error that names a field marks that field", () => {
    const out = actionError(new AppError("unprocessable", "no such store: x", [{ path: "stores", message: "no such store: x" }]));
    expect(out).toMatchObject({ ok: false, error: "no such store: x", fields: { stores: "no such store: x" } });
  });

  it("the submitted values go back without passwords", () => {
    const form = new FormData();
    form.set("username", "dora");
    form.set("password", "hunter22-secret");
    form.append("scopes", "read");
    form.append("scopes", "write");
    expect(formValues(form, { secret: ["password"] })).toEqual({ username: "dora", scopes: ["read", "write"] });
  });
});

describe("token allow-lists and labels", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
  });
  afterEach(() => env.cleanup());

  it("a read-only token may not name a store that does not exist (it could never create it)", () => {
    ensureCoreStore();
    expect(() => createApiToken({ input: { label: "r", agent_id: "reader", scopes: ["read"], stores: ["core", "no-such-store"] }, actor: "test" })).toThrow(/no such store: no-such-store \(a read-only token cannot create it\)/);
    expect(listApiTokens()).toHaveLength(0);
    createStore({ input: { name: "notes" }, actor: "test" });
    expect(createApiToken({ input: { label: "r", agent_id: "reader", scopes: ["read"], stores: ["notes"] }, actor: "test" }).info.stores).toEqual(["notes"]);
  });

  it("a write token may name a store it will create", () => {
    expect(createApiToken({ input: { label: "w", agent_id: "writer", scopes: ["write"], stores: ["later"] }, actor: "test" }).info.stores).toEqual(["later"]);
  });

  it("a label an active token already has is numbered; a revoked token's label is free again", () => {
    const a = createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" }).info;
    const b = createApiToken({ input: { label: "Laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" }).info;
    const c = createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" }).info;
    expect([a.label, b.label, c.label]).toEqual(["laptop", "Laptop (2)", "laptop (3)"]);
    revokeApiToken({ id: a.id, actor: "test" });
    expect(createApiToken({ input: { label: "laptop", agent_id: "claude", scopes: ["read"] }, actor: "test" }).info.label).toBe("laptop");
  });
});

describe("which store a page opens on", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
  });
  afterEach(() => env.cleanup());

  it("a store with only its schema (or only scratchpad keys) is empty; a trace makes it not", () => {
    createStore({ input: { name: "alpha" }, actor: "test" });
    const handle = openStore({ store: "alpha" });
    expect(storeHasContent({ handle })).toBe(false);
    handle.sqlite.prepare("insert into working_memory (key, value, updated_at, updated_by) values ('k', '1', 1, 't')").run();
    expect(storeHasContent({ handle }), "a scratchpad key is not content").toBe(false);
    recordTrace({ handle, agentId: "a", input: { intent: { verb: "fix", target: "login" }, shard_type: "web", outcome: "success" } });
    expect(storeHasContent({ handle })).toBe(true);
  });
});
