import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { archiveStoreAction } from "@/app/(dashboard)/stores/[store]/actions";
import { updateMemoryAction } from "@/app/(dashboard)/memories/actions";
import { governance } from "@/lib/backend/governance";
import { stores } from "@/lib/stores/backend";
import { governanceSql, seedStore, useTestBackend, type TestEnv } from "./backend";

// As tests/dashboard-forms.test.ts: the test says who calls; the role check, the write and the audit are the product's.
vi.mock("server-only", () => ({}));
const caller = vi.hoisted(() => ({ session: null as null | { user: { id: number; role: string; sv: number; name: string } } }));
vi.mock("next-auth", async (importOriginal) => ({ ...(await importOriginal<typeof import("next-auth")>()), getServerSession: async () => caller.session }));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined }));

/** The store page's Archive / Unarchive for admins, and what an archived store means to the memory editor. */
let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("annex");
  await governance().insertUser({ username: "eddie", passwordHash: "x", role: "editor", actor: "test" });
});
afterAll(async () => env?.cleanup());

const signInAs = async (username: string) => {
  const u = (await governance().getUserByUsername({ username }))!;
  caller.session = { user: { id: u.id, role: u.role, sv: u.sessionVersion, name: u.username } };
};
const form = (fields: Record<string, string>) => {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  return f;
};

describe("archive from the store page", () => {
  it("an editor is refused; an admin archives (audited under their name); the memory editor's save is refused; unarchive undoes it", async () => {
    await signInAs("eddie");
    expect(await archiveStoreAction(null, form({ store: "annex", intent: "archive" }))).toMatchObject({ ok: false, error: "admins only" });
    expect((await stores().describeStore({ store: "annex" })).archived).toBe(false);

    await signInAs("admin");
    expect(await archiveStoreAction(null, form({ store: "annex", intent: "archive" }))).toMatchObject({ ok: true });
    expect((await stores().describeStore({ store: "annex" })).archived).toBe(true);
    expect(await governanceSql("select actor from audit_log where action = 'store.archive' and target = 'store:annex'")).toEqual([{ actor: "user:admin" }]);

    await signInAs("eddie");
    const saved = await updateMemoryAction(null, form({ store: "annex", path: "notes/x", body: "edited" }));
    expect(saved).toMatchObject({ ok: false });
    expect((saved as { error: string }).error).toContain("archived");

    await signInAs("admin");
    expect(await archiveStoreAction(null, form({ store: "annex", intent: "unarchive" }))).toMatchObject({ ok: true });
    expect((await stores().describeStore({ store: "annex" })).archived).toBe(false);
  });
});
