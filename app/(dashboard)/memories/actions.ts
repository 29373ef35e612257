"use server";

import { z } from "zod";
import { requireRoleForAction } from "@/app/_server/session";
import { actorOf } from "@/lib/auth/actor";
import { storeNameSchema } from "@/lib/db/store-names";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { AppError } from "@/lib/errors";
import { createMemorySchema, memoryPathSchema, restoreMemorySchema, trashIdSchema, updateMemorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";

// Server actions are public endpoints: each checks the session and role itself, then writes through
// stores() as the API does (SQLite: the file, the index and the audit row; PostgreSQL: the rows and the audit row).
// No revalidatePath: the form navigates to the memory's (new) page, which renders fresh, and a refresh of
// the page it was on would unmount the form (a moved or deleted memory is "not found" there) before it can.

type Done = ActionResult<{ href: string }>;

const text = (form: FormData, name: string) => String(form.get(name) ?? "");
const memoryHref = (store: string, memoryPath: string) => `/memories?store=${encodeURIComponent(store)}&path=${encodeURIComponent(memoryPath)}`;

/** The editor's frontmatter fields as the API takes them; blank means "none". */
function frontmatterFields(form: FormData) {
  const tags = text(form, "tags")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  const date = text(form, "expires").trim();
  const expires = date === "" ? null : z.object({ expires_at: z.iso.date("expires must be a date (YYYY-MM-DD)") }).parse({ expires_at: date }).expires_at;
  const optional = (name: string) => (text(form, name).trim() === "" ? null : text(form, name).trim());
  return { tags, summary: optional("summary"), source: optional("source"), expires_at: expires === null ? null : `${expires}T00:00:00Z` };
}

function storeFrom(form: FormData): string {
  return storeNameSchema.parse(form.get("store"));
}

export async function createMemoryAction(_prev: Done | null, form: FormData): Promise<Done> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const store = storeFrom(form);
    const { summary, source, expires_at, tags } = frontmatterFields(form);
    const input = createMemorySchema.parse({ path: text(form, "path").trim(), body: text(form, "body"), tags, summary: summary ?? undefined, source: source ?? undefined, expires_at: expires_at ?? undefined });
    const memory = await stores().createMemory({ store, input, actor: actorOf(user) });
    return { ok: true, message: `Created ${memory.path}.`, data: { href: memoryHref(store, memory.path) } };
  } catch (e) {
    return actionError({ error: e });
  }
}

export async function updateMemoryAction(_prev: Done | null, form: FormData): Promise<Done> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const store = storeFrom(form);
    const input = updateMemorySchema.parse({ path: text(form, "path"), body: text(form, "body"), ...frontmatterFields(form) });
    const memory = await stores().updateMemory({ store, input, actor: actorOf(user) });
    return { ok: true, message: `Saved ${memory.path}.`, data: { href: memoryHref(store, memory.path) } };
  } catch (e) {
    return actionError({ error: e });
  }
}

export async function moveMemoryAction(_prev: Done | null, form: FormData): Promise<Done> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const store = storeFrom(form);
    // A move is the API's update with move_to (PUT /memories), so it is validated and audited the same way.
    const input = updateMemorySchema.parse({ path: text(form, "path"), move_to: text(form, "to").trim() });
    if (input.move_to === input.path) throw new AppError("unprocessable", `memory ${input.path} is already at that path`);
    const memory = await stores().updateMemory({ store, input, actor: actorOf(user) });
    return { ok: true, message: `Moved to ${memory.path}.`, data: { href: memoryHref(store, memory.path) } };
  } catch (e) {
    return actionError({ error: e });
  }
}

export async function deleteMemoryAction(_prev: Done | null, form: FormData): Promise<Done> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const store = storeFrom(form);
    const memoryPath = memoryPathSchema.parse(form.get("path"));
    await stores().deleteMemory({ store, memoryPath, actor: actorOf(user) });
    // The list page then offers to undo: the entry the delete just put in the trash (none when the trash keeps nothing).
    const trashed = (await stores().listMemoryTrash({ store })).find((t) => t.path === memoryPath);
    const undo = trashed ? `&deleted=${encodeURIComponent(trashed.id)}` : "";
    return { ok: true, message: `Deleted ${memoryPath}.`, data: { href: `/memories?store=${encodeURIComponent(store)}${undo}` } };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** Put a deleted memory back (at its old path, or at `to` when given): the API's POST /memories/trash. */
export async function restoreMemoryAction(_prev: Done | null, form: FormData): Promise<Done> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const store = storeFrom(form);
    const to = text(form, "to").trim();
    const input = restoreMemorySchema.parse({ id: text(form, "id"), ...(to ? { to } : {}) });
    const memory = await stores().restoreMemory({ store, input, actor: actorOf(user) });
    return { ok: true, message: `Restored ${memory.path}.`, data: { href: memoryHref(store, memory.path) } };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** Remove one deleted memory from the trash for good, before the retention would. */
export async function purgeTrashedMemoryAction(_prev: Done | null, form: FormData): Promise<Done> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const store = storeFrom(form);
    const id = trashIdSchema.parse(text(form, "id"));
    await stores().purgeTrashedMemory({ store, id, actor: actorOf(user) });
    return { ok: true, message: "Purged for good.", data: { href: `/memories/trash?store=${encodeURIComponent(store)}` } };
  } catch (e) {
    return actionError({ error: e });
  }
}
