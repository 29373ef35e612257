import { getConfig } from "../config";
import fs from "node:fs";
import { and, asc, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import { categories, memories, type PgMemoryRow } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { audit } from "./engine-steps";
import { assertAuditRoom } from "../governance/limits";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { readFileNoFollow, resolveInside } from "./contained-fs";
import { markdownFilesIn } from "./files";
import { inCallerTx, write } from "../db/port";
import { memoryStateToTrashOp, purgeTrashStateOp } from "./memory-trash-state";
import { importBypassOp } from "./import-bypass";
import {
  CATEGORY_FILE,
  describeCategoryOp,
  describedCategory,
  ensureCategoryOp,
  indexMemoryOp,
  removeMemoryOp,
  categoryPathSchema,
  memoryFromText,
  memoryTarget,
  memoryOfRow,
  memoryPathSchema,
  MEMORY_TRASH_LIST_MAX,
  newTrashId,
  noTrashEntry,
  createWrite,
  updateWrite,
  restoreWrite,
  type MemoryWrite,
  memoryWriteOp,
  trashedMemoryOf,
  trashIdSchema,
  trashRetentionMs,
  type restoreMemorySchema,
  type TrashedMemory,
  type TrashedMemoryWithBody,
  writeFileAtomic,
  type CategoryChild,
  type setCategorySchema,
  type createMemorySchema,
  type MemoryWithBody,
  type updateMemorySchema,
} from "./memories";

/**
 * Memories on PostgreSQL: replicas share no disk, so the `memories` table is
 * the truth (each row keeps the memory file's whole text, indexed in the same
 * transaction). `exportMemoriesPg`/`importMemoriesPg` keep the git workflow
 * through a folder, byte for byte both ways.
 */

/** What a write answers, as on SQLite: the memory with its body, from the text just stored. */
const withBody = (r: PgMemoryRow): MemoryWithBody => ({ ...memoryFromText({ memoryPath: r.path, text: r.content, mtime: r.updatedAt }), ...memoryOfRow(r) });

/**
 * Re-index the memories whose documents a migration marked for it (sha256
 * ''), in the caller's transaction: run when a store's schema is migrated,
 * so an upgrade that changes how memories are chunked applies by itself.
 */
export async function reindexMarkedMemoriesPg({ tx }: { tx: PgStoreTx }): Promise<number> {
  const marked = await tx.execute(sql`select m.path, m.content, m.updated_at as "updatedAt" from memories m join documents d on d.path = 'memory/' || m.path || '.md' where d.sha256 = '' order by m.path`);
  const rows = marked.rows as { path: string; content: string; updatedAt: number | string }[];
  for (const r of rows) await inCallerTx(tx, indexMemoryOp({ memoryPath: r.path, text: r.content, mtime: Number(r.updatedAt) }));
  return rows.length;
}

async function lockMemory(tx: PgStoreTx, memoryPath: string): Promise<PgMemoryRow | undefined> {
  return (await tx.select().from(memories).where(eq(memories.path, memoryPath)).for("update"))[0];
}

export async function getMemoryByPathPg({ handle, memoryPath }: { handle: PgStoreHandle; memoryPath: string }): Promise<MemoryWithBody> {
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const [row] = await tx.select().from(memories).where(eq(memories.path, memoryPath));
    if (!row) throw new AppError("not_found", `no memory ${memoryPath}`);
    return memoryFromText({ memoryPath, text: row.content, mtime: row.updatedAt });
  } });
}

/**
 * A create, update or restore (`plan`, made in the transaction from what it locked): `to` must be free (an update
 * that stays keeps its own path), then memoryWriteOp; the answer is the memory as stored.
 */
async function writeMemoryPg({ handle, actor, now, plan }: { handle: PgStoreHandle; actor: string; now: number; plan: (tx: PgStoreTx) => Promise<MemoryWrite & { updating?: string }> }): Promise<MemoryWithBody> {
  return withStoreTx({ handle, work: async (tx) => {
    // Refused before any work when its audit row would be: a refused write's index entries outlive its rollback.
    await inCallerTx(tx, assertAuditRoom({ actor }), handle);
    const w = await plan(tx);
    if (w.to !== w.updating && (await lockMemory(tx, w.to))) throw new AppError("conflict", w.conflict);
    await inCallerTx(tx, memoryWriteOp({ store: handle.store, write: w, mtime: now }), handle);
    return withBody((await lockMemory(tx, w.to))!);
  } });
}

export async function createMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.output<typeof createMemorySchema>; actor: string; now?: number }): Promise<MemoryWithBody> {
  return writeMemoryPg({ handle, actor, now, plan: async () => createWrite({ store: handle.store, input, actor, now }) });
}

/** Update fields and/or body (and move with move_to), as updateMemory does on SQLite. */
export async function updateMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.output<typeof updateMemorySchema>; actor: string; now?: number }): Promise<MemoryWithBody> {
  return writeMemoryPg({ handle, actor, now, plan: async (tx) => {
    const row = await lockMemory(tx, input.path);
    if (!row) throw new AppError("not_found", `no memory ${input.path}`);
    const current = memoryFromText({ memoryPath: row.path, text: row.content, mtime: row.updatedAt });
    return { ...updateWrite({ store: handle.store, current, input, actor, now }), updating: input.path };
  } });
}

/** Delete: the row's text goes to memory_trash (restorable for DUALMIND_MEMORY_TRASH_DAYS) in the same transaction as the index rows and the audit row. */
export async function deleteMemoryPg({ handle, memoryPath, actor, now = Date.now() }: { handle: PgStoreHandle; memoryPath: string; actor: string; now?: number }): Promise<void> {
  await withStoreTx({ handle, work: async (tx) => {
    const row = await lockMemory(tx, memoryPath);
    if (!row) throw new AppError("not_found", `no memory ${memoryPath}`);
    await purgeExpiredTrashPg(tx, handle, now);
    const id = newTrashId(now);
    if (trashRetentionMs() > 0) {
      await tx.execute(sql`insert into memory_trash(id, path, content, deleted_at, deleted_by) values (${id}, ${memoryPath}, ${row.content}, ${now}, ${actor})`);
      await inCallerTx(tx, memoryStateToTrashOp({ memoryPath, trashId: id }));
    }
    await inCallerTx(tx, removeMemoryOp(memoryPath));
    await inCallerTx(tx, audit({ actor, action: "memory.delete", target: memoryTarget({ handle, memoryPath }), details: { trashId: id } }), handle);
  } });
}

type TrashRow = { id: string; path: string; content: string; deleted_at: number | string; deleted_by: string };

const trashEntryOf = (r: TrashRow): TrashedMemoryWithBody => trashedMemoryOf({ id: r.id, path: r.path, deletedAt: Number(r.deleted_at), deletedBy: r.deleted_by, text: r.content });

async function purgeExpiredTrashPg(tx: PgStoreTx, handle: PgStoreHandle, now: number): Promise<void> {
  const expired = (await tx.execute(sql`delete from memory_trash where deleted_at <= ${now - trashRetentionMs()} returning id`)).rows as { id: string }[];
  await inCallerTx(tx, purgeTrashStateOp({ trashIds: expired.map((r) => r.id) }));
  // Past DUALMIND_MEMORY_TRASH_MAX_BYTES or DUALMIND_MEMORY_TRASH_MAX_ENTRIES the oldest entries go first, each audited as memory.purge.
  const { memoryTrashMaxBytes, memoryTrashMaxEntries } = getConfig().limits;
  const over = (
    await tx.execute(
      sql`select id, path, nth > ${memoryTrashMaxEntries} as by_count from (select id, path, sum(octet_length(content)) over (order by id desc) as kept, row_number() over (order by id desc) as nth from memory_trash) t where kept > ${memoryTrashMaxBytes} or nth > ${memoryTrashMaxEntries}`,
    )
  ).rows as { id: string; path: string; by_count: boolean }[];
  for (const row of over) {
    await tx.execute(sql`delete from memory_trash where id = ${row.id}`);
    await inCallerTx(tx, purgeTrashStateOp({ trashIds: [row.id] }));
    await inCallerTx(tx, audit({ actor: "system", action: "memory.purge", target: memoryTarget({ handle, memoryPath: row.path }), details: { trashId: row.id, limit: row.by_count ? "DUALMIND_MEMORY_TRASH_MAX_ENTRIES" : "DUALMIND_MEMORY_TRASH_MAX_BYTES" } }), handle);
  }
}

/** The store's trash, newest first, expired entries purged first (the twin of listMemoryTrash). */
export async function listMemoryTrashPg({ handle, now = Date.now() }: { handle: PgStoreHandle; now?: number }): Promise<TrashedMemory[]> {
  return withStoreTx({ handle, readOnly: handle.readOnly, work: async (tx) => {
    if (!handle.readOnly) await purgeExpiredTrashPg(tx, handle, now);
    const rows = (await tx.execute(sql`select id, path, content, deleted_at, deleted_by from memory_trash where deleted_at > ${now - trashRetentionMs()} order by id desc limit ${MEMORY_TRASH_LIST_MAX}`)).rows as TrashRow[];
    return rows.map((r) => {
      const { body: _body, ...entry } = trashEntryOf(r);
      return entry;
    });
  } });
}

/** A trash entry not yet past its retention (404 otherwise), locked for a restore or purge. */
async function trashRowPg({ tx, handle, id, now, lock = false }: { tx: PgStoreTx; handle: PgStoreHandle; id: string; now: number; lock?: boolean }): Promise<TrashRow> {
  if (!trashIdSchema.safeParse(id).success) throw noTrashEntry({ store: handle.store, id });
  const [row] = (await tx.execute(sql`select id, path, content, deleted_at, deleted_by from memory_trash where id = ${id} and deleted_at > ${now - trashRetentionMs()}${lock ? sql` for update` : sql``}`)).rows as TrashRow[];
  if (!row) throw noTrashEntry({ store: handle.store, id });
  return row;
}

export async function getTrashedMemoryPg({ handle, id, now = Date.now() }: { handle: PgStoreHandle; id: string; now?: number }): Promise<TrashedMemoryWithBody> {
  return withStoreTx({ handle, readOnly: true, work: async (tx) => trashEntryOf(await trashRowPg({ tx, handle, id, now })) });
}

/** Put a deleted memory back at its path or `to`, its text byte for byte, audited memory.restore (as restoreMemory on SQLite). */
export async function restoreMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.output<typeof restoreMemorySchema>; actor: string; now?: number }): Promise<MemoryWithBody> {
  return writeMemoryPg({ handle, actor, now, plan: async (tx) => {
    const row = await trashRowPg({ tx, handle, id: input.id, now, lock: true });
    // The entry leaves the trash in the same transaction: a refused restore keeps it.
    await tx.execute(sql`delete from memory_trash where id = ${input.id}`);
    return restoreWrite({ store: handle.store, entry: trashEntryOf(row), text: row.content, input, actor });
  } });
}

/** Delete a trash entry for good now; audited memory.purge (as purgeTrashedMemory on SQLite). */
export async function purgeTrashedMemoryPg({ handle, id, actor, now = Date.now() }: { handle: PgStoreHandle; id: string; actor: string; now?: number }): Promise<void> {
  await withStoreTx({ handle, work: async (tx) => {
    const row = await trashRowPg({ tx, handle, id, now, lock: true });
    await tx.execute(sql`delete from memory_trash where id = ${id}`);
    await inCallerTx(tx, purgeTrashStateOp({ trashIds: [id] }));
    await inCallerTx(tx, audit({ actor, action: "memory.purge", target: memoryTarget({ handle, memoryPath: row.path }), details: { trashId: id } }), handle);
  } });
}

export type MemoryExport = { dir: string; memories: number; categories: number; written: number; unchanged: number; overwritten: number };

/** Same-named files an export refuses to replace without `force`, named in the error (at most this many). */
const LISTED_CONFLICTS = 20;

/**
 * Write every memory to `dir` as `<category…>/<slug>.md` (its stored text,
 * byte for byte) and every category description to `<category…>/_category.md`.
 * A file already holding the same bytes is left alone (its mtime too), so
 * exporting into a git checkout changes only what changed. Files in `dir`
 * that are not memories of the store are left in place. A same-named file
 * holding something else (an edit not imported yet, another store's export)
 * is never replaced silently: the export refuses (409, nothing written, the
 * files named) unless `force`, which replaces them and counts them.
 */
export async function exportMemoriesPg({ handle, dir, force = false }: { handle: PgStoreHandle; dir: string; force?: boolean }): Promise<MemoryExport> {
  const { rows, described } = await withStoreTx({ handle, readOnly: true, work: async (tx) => ({
    rows: await tx.select({ path: memories.path, content: memories.content }).from(memories).orderBy(asc(memories.path)),
    described: await tx.select({ path: categories.path, description: categories.description }).from(categories).where(sql`${categories.description} is not null`).orderBy(asc(categories.path)),
  }) });
  const files = [
    ...rows.map((r) => {
      const segments = r.path.split("/");
      segments[segments.length - 1] += ".md";
      return { segments, content: r.content, what: `memory ${r.path}` };
    }),
    ...described.map((c) => ({ segments: [...c.path.split("/"), CATEGORY_FILE], content: `${c.description}\n`, what: `category ${c.path}` })),
  ];
  fs.mkdirSync(dir, { recursive: true });
  // Paths were validated when written; resolveInside refuses a symbolic link in the way all the same.
  const planned = files.map((f) => {
    const file = resolveInside({ root: dir, segments: f.segments, what: f.what });
    const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
    return { ...f, file, state: current === null ? "new" : current === f.content ? "same" : "different" };
  });
  const different = planned.filter((p) => p.state === "different");
  if (different.length > 0 && !force) {
    const names = different.slice(0, LISTED_CONFLICTS).map((p) => p.segments.join("/"));
    throw new AppError(
      "conflict",
      `${different.length} file(s) in ${dir} differ from the store's memories and would be overwritten: ${names.join(", ")}${different.length > names.length ? ", …" : ""}; import them first (memories import), export to another folder, or pass --force to replace them`,
      names.map((name) => ({ path: name, message: "differs from the store's version" })),
    );
  }
  const out: MemoryExport = { dir, memories: rows.length, categories: described.length, written: 0, unchanged: 0, overwritten: different.length };
  for (const p of planned) {
    if (p.state === "same") out.unchanged++;
    else {
      writeFileAtomic({ file: p.file, content: p.content });
      out.written++;
    }
  }
  return out;
}

export type MemoryImport = { dir: string; added: number; changed: number; unchanged: number; categories: number; skipped: { path: string; reason: string }[] };

/**
 * Read a folder written by exportMemoriesPg (or a SQLite store's memory/
 * folder) into the store, in one transaction with one audit row: each
 * `<category…>/<slug>.md` becomes that memory with the file's exact text;
 * `_category.md` sets its category's description. Memories not in the folder
 * are kept. Files whose path is not a valid memory path are skipped and listed.
 */
export async function importMemoriesPg({ handle, dir, actor }: { handle: PgStoreHandle; dir: string; actor: string }): Promise<MemoryImport> {
  return withStoreTx({ handle, work: async (tx) => {
    const out = await importMemoryFolderPg({ tx, dir });
    if (out.added + out.changed + out.categories > 0) {
      await inCallerTx(tx, audit({ actor, action: "memories.import", target: `store:${handle.store}`, details: { added: out.added, changed: out.changed, unchanged: out.unchanged, categories: out.categories, skipped: out.skipped.length } }), handle);
    }
    await inCallerTx(tx, importBypassOp({ store: handle.store, imported: out, actor }), handle);
    return out;
  } });
}

/** importMemoriesPg's work inside the caller's transaction, without its audit row (migrate-data writes its own). */
export async function importMemoryFolderPg({ tx, dir }: { tx: PgStoreTx; dir: string }): Promise<MemoryImport> {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new AppError("invalid_request", `${dir} is not a folder`);
  const files = markdownFilesIn(dir);
  const out: MemoryImport = { dir, added: 0, changed: 0, unchanged: 0, categories: 0, skipped: [] };
  for (const rel of files) {
    const { bytes, mtimeMs } = readFileNoFollow({ file: resolveInside({ root: dir, segments: rel.split("/"), what: rel }), what: rel });
    const text = bytes.toString("utf8");
    if (rel.endsWith(`/${CATEGORY_FILE}`) || rel === CATEGORY_FILE) {
      const category = rel.slice(0, -(CATEGORY_FILE.length + 1));
      if (!categoryPathSchema.safeParse(category).success) {
        out.skipped.push({ path: rel, reason: "not a valid category path" });
        continue;
      }
      await inCallerTx(tx, ensureCategoryOp({ category }));
      const description = text.replace(/\n$/, "");
      await tx.update(categories).set({ description: description === "" ? null : description }).where(and(eq(categories.path, category)));
      out.categories++;
      continue;
    }
    const memoryPath = rel.slice(0, -3);
    if (!memoryPathSchema.safeParse(memoryPath).success) {
      out.skipped.push({ path: rel, reason: "not a valid memory path (<category>/<slug>.md, letters, digits, '_' and '-')" });
      continue;
    }
    const r = await inCallerTx(tx, indexMemoryOp({ memoryPath, text, mtime: Math.round(mtimeMs) }));
    out[r.status]++;
  }
  return out;
}

/** Describe a category (the row is the truth here; `memories export` writes it to _category.md). An empty description clears it. */
export async function setCategoryDescriptionPg({ handle, input, actor }: { handle: PgStoreHandle; input: z.output<typeof setCategorySchema>; actor: string }): Promise<CategoryChild> {
  await write(handle, describeCategoryOp({ store: handle.store, input, actor }));
  return describedCategory({ handle, path: input.path });
}
