import { getConfig } from "../config";
import fs from "node:fs";
import path from "node:path";
import { and, asc, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import { categories, memories, type PgMemoryRow } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { audit } from "./engine-steps";
import { assertAuditRoom } from "../governance/limits";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { readFileNoFollow, resolveInside } from "./contained-fs";
import { inCallerTx, write } from "../db/port";
import { documentLeastGrowth, documentsLeastGrowth, type IngestResult } from "./ingest";
import { withStoreQuotaPg } from "./store-quota";
import {
  memoryDocPath,
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
  renderMemoryFile,
  restoreDetails,
  trashedMemoryOf,
  trashIdSchema,
  trashRetentionMs,
  type restoreMemorySchema,
  type TrashedMemory,
  type TrashedMemoryWithBody,
  memoryUpdateAudit,
  updatedMemoryFields,
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

/** Store one memory file's text as the truth and index it, in the caller's transaction (indexMemoryOp). */
export async function putMemoryTextPg({ tx, ...args }: { tx: PgStoreTx; memoryPath: string; text: string; mtime: number; capped?: boolean }): Promise<IngestResult> {
  return inCallerTx(tx, indexMemoryOp(args));
}

/**
 * Re-index the memories whose documents a migration marked for it (sha256
 * ''), in the caller's transaction: run when a store's schema is migrated,
 * so an upgrade that changes how memories are chunked applies by itself.
 */
export async function reindexMarkedMemoriesPg({ tx }: { tx: PgStoreTx }): Promise<number> {
  const marked = await tx.execute(sql`select m.path, m.content, m.updated_at as "updatedAt" from memories m join documents d on d.path = 'memory/' || m.path || '.md' where d.sha256 = '' order by m.path`);
  const rows = marked.rows as { path: string; content: string; updatedAt: number | string }[];
  for (const r of rows) await putMemoryTextPg({ tx, memoryPath: r.path, text: r.content, mtime: Number(r.updatedAt) });
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

export async function createMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.output<typeof createMemorySchema>; actor: string; now?: number }): Promise<MemoryWithBody> {
  const content = renderMemoryFile({
    memory: { path: input.path, tags: input.tags ?? [], created_at: now, updated_at: now, expires_at: input.expires_at ?? null, source: input.source ?? null, summary: input.summary ?? null },
    body: input.body,
  });
  return withStoreTx({ handle, work: async (tx) => {
    // Refused before any work when its audit row would be: a refused write's index entries outlive its rollback.
    await inCallerTx(tx, assertAuditRoom({ actor }), handle);
    if (await lockMemory(tx, input.path)) throw new AppError("conflict", `memory ${input.path} already exists`);
    const adds = await inCallerTx(tx, documentLeastGrowth({ path: memoryDocPath(input.path), text: content }));
    await withStoreQuotaPg({ tx, store: handle.store, adds, write: () => putMemoryTextPg({ tx, memoryPath: input.path, text: content, mtime: now, capped: true }) });
    await inCallerTx(tx, audit({ actor, action: "memory.create", target: memoryTarget({ handle, memoryPath: input.path }) }), handle);
    return withBody((await lockMemory(tx, input.path))!);
  } });
}

/** Update fields and/or body (and move with move_to): the twin of updateMemory, re-rendering the file text. */
export async function updateMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.output<typeof updateMemorySchema>; actor: string; now?: number }): Promise<MemoryWithBody> {
  return withStoreTx({ handle, work: async (tx) => {
    await inCallerTx(tx, assertAuditRoom({ actor }), handle);
    const row = await lockMemory(tx, input.path);
    if (!row) throw new AppError("not_found", `no memory ${input.path}`);
    const current = memoryFromText({ memoryPath: row.path, text: row.content, mtime: row.updatedAt });
    const to = input.move_to ?? input.path;
    const moved = to !== input.path;
    if (moved && (await lockMemory(tx, to))) throw new AppError("conflict", `memory ${to} already exists`);
    const { next, body } = updatedMemoryFields({ current, input, to, now });
    const text = renderMemoryFile({ memory: next, body });
    // An update that cannot fit is refused before it writes (a move frees its old path's rows).
    const adds = await inCallerTx(tx, documentsLeastGrowth({ docs: [{ path: memoryDocPath(to), text }], freeing: [memoryDocPath(input.path), memoryDocPath(to)] }));
    await withStoreQuotaPg({ tx, store: handle.store, adds, write: async () => {
      if (moved) await inCallerTx(tx, removeMemoryOp(input.path));
      await putMemoryTextPg({ tx, memoryPath: to, text, mtime: now, capped: true });
    } });
    await inCallerTx(tx, audit({ actor, ...memoryUpdateAudit({ current, next, body, from: input.path, to }), target: memoryTarget({ handle, memoryPath: to }) }), handle);
    return withBody((await lockMemory(tx, to))!);
  } });
}

/** Delete: the row's text goes to memory_trash (restorable for DUALMIND_MEMORY_TRASH_DAYS) in the same transaction as the index rows and the audit row. */
export async function deleteMemoryPg({ handle, memoryPath, actor, now = Date.now() }: { handle: PgStoreHandle; memoryPath: string; actor: string; now?: number }): Promise<void> {
  await withStoreTx({ handle, work: async (tx) => {
    const row = await lockMemory(tx, memoryPath);
    if (!row) throw new AppError("not_found", `no memory ${memoryPath}`);
    await purgeExpiredTrashPg(tx, handle, now);
    const id = newTrashId(now);
    if (trashRetentionMs() > 0) await tx.execute(sql`insert into memory_trash(id, path, content, deleted_at, deleted_by) values (${id}, ${memoryPath}, ${row.content}, ${now}, ${actor})`);
    await inCallerTx(tx, removeMemoryOp(memoryPath));
    await inCallerTx(tx, audit({ actor, action: "memory.delete", target: memoryTarget({ handle, memoryPath }), details: { trashId: id } }), handle);
  } });
}

type TrashRow = { id: string; path: string; content: string; deleted_at: number | string; deleted_by: string };

const trashEntryOf = (r: TrashRow): TrashedMemoryWithBody => trashedMemoryOf({ id: r.id, path: r.path, deletedAt: Number(r.deleted_at), deletedBy: r.deleted_by, text: r.content });

async function purgeExpiredTrashPg(tx: PgStoreTx, handle: PgStoreHandle, now: number): Promise<void> {
  await tx.execute(sql`delete from memory_trash where deleted_at <= ${now - trashRetentionMs()}`);
  // Past DUALMIND_MEMORY_TRASH_MAX_BYTES or DUALMIND_MEMORY_TRASH_MAX_ENTRIES the oldest entries go first, each audited as memory.purge.
  const { memoryTrashMaxBytes, memoryTrashMaxEntries } = getConfig().limits;
  const over = (
    await tx.execute(
      sql`select id, path, nth > ${memoryTrashMaxEntries} as by_count from (select id, path, sum(octet_length(content)) over (order by id desc) as kept, row_number() over (order by id desc) as nth from memory_trash) t where kept > ${memoryTrashMaxBytes} or nth > ${memoryTrashMaxEntries}`,
    )
  ).rows as { id: string; path: string; by_count: boolean }[];
  for (const row of over) {
    await tx.execute(sql`delete from memory_trash where id = ${row.id}`);
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

async function trashRowPg(tx: PgStoreTx, handle: PgStoreHandle, id: string, now: number): Promise<TrashRow> {
  const [row] = (await tx.execute(sql`select id, path, content, deleted_at, deleted_by from memory_trash where id = ${id} and deleted_at > ${now - trashRetentionMs()} for update`)).rows as TrashRow[];
  if (!row) throw new AppError("not_found", `no deleted memory ${id} in the trash of store ${handle.store}`);
  return row;
}

export async function getTrashedMemoryPg({ handle, id, now = Date.now() }: { handle: PgStoreHandle; id: string; now?: number }): Promise<TrashedMemoryWithBody> {
  if (!trashIdSchema.safeParse(id).success) throw new AppError("not_found", `no deleted memory ${id} in the trash of store ${handle.store}`);
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const [row] = (await tx.execute(sql`select id, path, content, deleted_at, deleted_by from memory_trash where id = ${id} and deleted_at > ${now - trashRetentionMs()}`)).rows as TrashRow[];
    if (!row) throw new AppError("not_found", `no deleted memory ${id} in the trash of store ${handle.store}`);
    return trashEntryOf(row);
  } });
}

/** Put a deleted memory back at its path or `to`, its text byte for byte, audited memory.restore (the twin of restoreMemory). */
export async function restoreMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.output<typeof restoreMemorySchema>; actor: string; now?: number }): Promise<MemoryWithBody> {
  return withStoreTx({ handle, work: async (tx) => {
    await inCallerTx(tx, assertAuditRoom({ actor }), handle);
    const row = await trashRowPg(tx, handle, input.id, now);
    const to = input.to ?? row.path;
    if (await lockMemory(tx, to)) throw new AppError("conflict", `memory ${to} already exists: restore the deleted one to another path, or move that one first`);
    const adds = await inCallerTx(tx, documentLeastGrowth({ path: memoryDocPath(to), text: row.content }));
    await withStoreQuotaPg({ tx, store: handle.store, adds, write: () => putMemoryTextPg({ tx, memoryPath: to, text: row.content, mtime: now, capped: true }) });
    await tx.execute(sql`delete from memory_trash where id = ${input.id}`);
    await inCallerTx(tx, audit({ actor, action: "memory.restore", target: memoryTarget({ handle, memoryPath: to }), details: restoreDetails({ entry: trashEntryOf(row), to }) }), handle);
    return withBody((await lockMemory(tx, to))!);
  } });
}

/** Delete a trash entry for good now; audited memory.purge (the twin of purgeTrashedMemory). */
export async function purgeTrashedMemoryPg({ handle, id, actor, now = Date.now() }: { handle: PgStoreHandle; id: string; actor: string; now?: number }): Promise<void> {
  if (!trashIdSchema.safeParse(id).success) throw new AppError("not_found", `no deleted memory ${id} in the trash of store ${handle.store}`);
  await withStoreTx({ handle, work: async (tx) => {
    const row = await trashRowPg(tx, handle, id, now);
    await tx.execute(sql`delete from memory_trash where id = ${id}`);
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

/** Every regular `.md` file below `dir` (no hidden entries, no symbolic links), as `/`-separated relative paths, sorted. */
function listMarkdownFiles(dir: string): string[] {
  const out: string[] = [];
  const visit = (abs: string, rel: string) => {
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) visit(path.join(abs, e.name), childRel);
      else if (e.isFile() && e.name.endsWith(".md")) out.push(childRel);
    }
  };
  visit(dir, "");
  return out.sort();
}

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
    return out;
  } });
}

/** importMemoriesPg's work inside the caller's transaction, without its audit row (migrate-data writes its own). */
export async function importMemoryFolderPg({ tx, dir }: { tx: PgStoreTx; dir: string }): Promise<MemoryImport> {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new AppError("invalid_request", `${dir} is not a folder`);
  const files = listMarkdownFiles(dir);
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
    const r = await putMemoryTextPg({ tx, memoryPath, text, mtime: Math.round(mtimeMs) });
    out[r.status]++;
  }
  return out;
}

/** Describe a category (the row is the truth here; `memories export` writes it to _category.md). An empty description clears it. */
export async function setCategoryDescriptionPg({ handle, input, actor }: { handle: PgStoreHandle; input: z.output<typeof setCategorySchema>; actor: string }): Promise<CategoryChild> {
  await write(handle, describeCategoryOp({ store: handle.store, input, actor }));
  return describedCategory({ handle, path: input.path });
}
