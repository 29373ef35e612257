import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { z } from "zod";
import { storeDir } from "../db/connection";
import { AppError } from "../errors";
import { log } from "../log";
import { mkdirPrivate, PRIVATE_FILE_MODE } from "../private-fs";
import { existsNoFollow, readFileNoFollow, resolveInside } from "./contained-fs";
import { parseFrontmatter, stringifyFrontmatter } from "./frontmatter";
import { deleteDocumentByPath, ingestDocument } from "./ingest";
import { boolParam, csvParam, dateParam } from "./query-params";

/** A memory lives at memory/<category path>/<slug>.md; its API path is `<category path>/<slug>`. */
const MEMORY_SEGMENT_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/;
const MAX_DEPTH = 8;
export const CATEGORY_FILE = "_category.md";

function segmentsOk(p: string, minSegments: number): string | null {
  if (p.includes("\0")) return "must not contain NUL";
  if (p.startsWith("/") || p.includes("\\") || /^[A-Za-z]:/.test(p)) return "must be a relative path with '/' separators";
  const segs = p.split("/");
  if (segs.length < minSegments || segs.length > MAX_DEPTH + 1) return `must have ${minSegments}-${MAX_DEPTH + 1} segments`;
  if (segs.some((s) => s === ".." || s.includes(".."))) return "must not contain '..'";
  if (!segs.every((s) => MEMORY_SEGMENT_RE.test(s))) return "segments are 1-80 letters, digits, '_' or '-', starting with a letter or digit (no dots, no hidden names)";
  return null;
}

export const memoryPathSchema = z.string().max(400).superRefine((p, ctx) => {
  const problem = segmentsOk(p, 2);
  if (problem) ctx.addIssue({ code: "custom", message: `memory path ${problem} (form: <category>/<slug>)` });
});

export const categoryPathSchema = z.string().max(400).superRefine((p, ctx) => {
  const problem = segmentsOk(p, 1);
  if (problem) ctx.addIssue({ code: "custom", message: `category path ${problem}` });
});

const dateInput = z.union([z.iso.datetime({ offset: true }), z.number().int().nonnegative()]).transform((v) => (typeof v === "number" ? v : Date.parse(v)));
const tagsInput = z
  .array(z.string().trim().min(1).max(64))
  .max(32)
  .transform((t) => [...new Set(t)]);

export const createMemorySchema = z
  .object({
    path: memoryPathSchema,
    body: z.string().max(1024 * 1024),
    tags: tagsInput.optional(),
    summary: z.string().max(1000).optional(),
    source: z.string().max(200).optional(),
    expires_at: dateInput.optional(),
  })
  .strict();

export const updateMemorySchema = z
  .object({
    path: memoryPathSchema,
    body: z.string().max(1024 * 1024).optional(),
    tags: tagsInput.optional(),
    summary: z.string().max(1000).nullable().optional(),
    source: z.string().max(200).nullable().optional(),
    expires_at: dateInput.nullable().optional(),
    /** Move the memory (delete + create) to this path. */
    move_to: memoryPathSchema.optional(),
  })
  .strict();

export type Memory = {
  path: string;
  category: string;
  slug: string;
  tags: string[];
  tokenEstimate: number;
  source: string | null;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
  summary: string | null;
};

export type MemoryWithBody = Memory & { body: string };

export function memoryDir(store: string): string {
  return path.join(storeDir(store), "memory");
}

/**
 * The file of a memory, checked on disk: a symbolic link anywhere below the
 * store's memory folder makes it a 422, so no read, write, move or delete
 * ever reaches outside the folder through one.
 */
function memoryFile(store: string, memoryPath: string): string {
  const segments = memoryPath.split("/");
  segments[segments.length - 1] += ".md";
  return resolveInside({ root: memoryDir(store), segments, what: `memory ${memoryPath}` });
}

function categoryFile(store: string, category: string): string {
  return resolveInside({ root: memoryDir(store), segments: [...category.split("/"), CATEGORY_FILE], what: `category ${category}` });
}

export function memoryDocPath(memoryPath: string): string {
  return `memory/${memoryPath}.md`;
}

/** Write content to a hidden temp file beside `file` (same folder, so a rename is atomic). Nothing is left behind on failure. */
function writeTempBeside(file: string, content: string): string {
  mkdirPrivate(path.dirname(file));
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    // "wx" never follows a link: an existing name (link or not) is an error.
    fs.writeFileSync(tmp, content, { flag: "wx", mode: PRIVATE_FILE_MODE });
    return tmp;
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** Write via a hidden temp file in the same folder + rename, so readers see the old or the new file, never half. */
export function writeFileAtomic(file: string, content: string): void {
  const tmp = writeTempBeside(file, content);
  try {
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

function dateField(v: unknown): number | null {
  if (typeof v !== "string" || v === "") return null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : null;
}

function iso(ms: number | null | undefined): string | undefined {
  return ms === null || ms === undefined ? undefined : new Date(ms).toISOString();
}

/** Parse a memory file's text into its index row (dates missing from the frontmatter fall back to the file's mtime). */
export function memoryFromText({ memoryPath, text, mtime }: { memoryPath: string; text: string; mtime: number }): MemoryWithBody {
  const { data, body } = parseFrontmatter(text);
  const str = (k: string) => (typeof data[k] === "string" && data[k] !== "" ? (data[k] as string) : null);
  const tags = Array.isArray(data.tags) ? data.tags : typeof data.tags === "string" && data.tags ? [data.tags] : [];
  const slash = memoryPath.lastIndexOf("/");
  const createdAt = dateField(data.created_at) ?? mtime;
  return {
    path: memoryPath,
    category: memoryPath.slice(0, slash),
    slug: memoryPath.slice(slash + 1),
    tags,
    tokenEstimate: Math.ceil(body.length / 4),
    source: str("source"),
    createdAt,
    updatedAt: dateField(data.updated_at) ?? createdAt,
    expiresAt: dateField(data.expires_at),
    summary: str("summary"),
    body,
  };
}

/** Make sure a category and all its ancestors have rows. */
export function ensureCategoryPath({ sqlite, category }: { sqlite: Database.Database; category: string }): void {
  const add = sqlite.prepare("insert into categories(path, parent_path) values (?, ?) on conflict(path) do nothing");
  const segs = category.split("/");
  for (let i = 1; i <= segs.length; i++) add.run(segs.slice(0, i).join("/"), i > 1 ? segs.slice(0, i - 1).join("/") : null);
}

/** Index one memory file's text: its memories row, its categories and its document + chunks. */
export function indexMemoryText({ sqlite, memoryPath, text, mtime }: { sqlite: Database.Database; memoryPath: string; text: string; mtime: number }) {
  const m = memoryFromText({ memoryPath, text, mtime });
  return sqlite.transaction(() => {
    sqlite
      .prepare(
        `insert into memories(path, category, tags, token_estimate, source, created_at, updated_at, expires_at, summary)
         values (@path, @category, @tags, @tokenEstimate, @source, @createdAt, @updatedAt, @expiresAt, @summary)
         on conflict(path) do update set category = excluded.category, tags = excluded.tags, token_estimate = excluded.token_estimate,
           source = excluded.source, created_at = excluded.created_at, updated_at = excluded.updated_at,
           expires_at = excluded.expires_at, summary = excluded.summary
         where memories.tags is not excluded.tags or memories.token_estimate is not excluded.token_estimate
           or memories.source is not excluded.source or memories.created_at is not excluded.created_at
           or memories.updated_at is not excluded.updated_at or memories.expires_at is not excluded.expires_at
           or memories.summary is not excluded.summary or memories.category is not excluded.category`,
      )
      .run({ ...m, tags: JSON.stringify(m.tags) });
    ensureCategoryPath({ sqlite, category: m.category });
    return ingestDocument({ sqlite, path: memoryDocPath(memoryPath), origin: "file", text, mtime });
  }).immediate();
}

/** Drop a memory's index rows, and categories left with no memories and no description. */
export function removeMemoryIndex({ sqlite, memoryPath }: { sqlite: Database.Database; memoryPath: string }): void {
  sqlite.transaction(() => {
    sqlite.prepare("delete from memories where path = ?").run(memoryPath);
    deleteDocumentByPath({ sqlite, path: memoryDocPath(memoryPath) });
    pruneCategories({ sqlite });
  }).immediate();
}

export function pruneCategories({ sqlite }: { sqlite: Database.Database }): number {
  return sqlite
    .prepare(
      `delete from categories where description is null and not exists (
         select 1 from memories m where m.category = categories.path or substr(m.category, 1, length(categories.path) + 1) = categories.path || '/')`,
    )
    .run().changes;
}

function renderMemoryFile(m: Omit<Memory, "category" | "slug" | "tokenEstimate">, body: string): string {
  return stringifyFrontmatter(
    {
      tags: m.tags,
      created_at: iso(m.createdAt),
      updated_at: iso(m.updatedAt),
      expires_at: iso(m.expiresAt),
      source: m.source,
      summary: m.summary,
    },
    body,
  );
}

/**
 * The new text goes to a temp file first (a full disk fails here), then the
 * index commits, then the rename makes the file the truth. A failed index
 * write (e.g. SQLITE_FULL) removes the temp file, so the caller's error means
 * nothing was written. Only a failed rename after the commit leaves the index
 * ahead of the file; the error says so and the next reindex repairs it.
 */
function writeMemory({ store, sqlite, memoryPath, content }: { store: string; sqlite: Database.Database; memoryPath: string; content: string }): Memory {
  const file = memoryFile(store, memoryPath);
  const tmp = writeTempBeside(file, content);
  try {
    indexMemoryText({ sqlite, memoryPath, text: content, mtime: fs.statSync(tmp).mtimeMs });
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  try {
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    log("error", "memory indexed but its file could not be renamed into place", { store, memoryPath, error: String(e) });
    throw new AppError("internal", `memory ${memoryPath} was indexed but its file could not be written; run a reindex of store ${store}`);
  }
  return getMemoryByPath({ store, memoryPath });
}

export function createMemory({ store, sqlite, input, now = Date.now() }: { store: string; sqlite: Database.Database; input: z.output<typeof createMemorySchema>; now?: number }): Memory {
  if (existsNoFollow(memoryFile(store, input.path))) throw new AppError("conflict", `memory ${input.path} already exists`);
  const content = renderMemoryFile(
    { path: input.path, tags: input.tags ?? [], createdAt: now, updatedAt: now, expiresAt: input.expires_at ?? null, source: input.source ?? null, summary: input.summary ?? null },
    input.body,
  );
  return writeMemory({ store, sqlite, memoryPath: input.path, content });
}

export function updateMemory({ store, sqlite, input, now = Date.now() }: { store: string; sqlite: Database.Database; input: z.output<typeof updateMemorySchema>; now?: number }): Memory {
  const current = getMemoryByPath({ store, memoryPath: input.path });
  const target = input.move_to ?? input.path;
  if (input.move_to && input.move_to !== input.path && existsNoFollow(memoryFile(store, input.move_to))) {
    throw new AppError("conflict", `memory ${input.move_to} already exists`);
  }
  const content = renderMemoryFile(
    {
      path: target,
      tags: input.tags ?? current.tags,
      createdAt: current.createdAt,
      updatedAt: now,
      expiresAt: input.expires_at === undefined ? current.expiresAt : input.expires_at,
      source: input.source === undefined ? current.source : input.source,
      summary: input.summary === undefined ? current.summary : input.summary,
    },
    input.body ?? current.body,
  );
  const saved = writeMemory({ store, sqlite, memoryPath: target, content });
  if (target !== input.path) deleteMemory({ store, sqlite, memoryPath: input.path });
  return saved;
}

export function deleteMemory({ store, sqlite, memoryPath }: { store: string; sqlite: Database.Database; memoryPath: string }): void {
  const file = memoryFile(store, memoryPath);
  if (!existsNoFollow(file)) throw new AppError("not_found", `no memory ${memoryPath}`);
  fs.rmSync(file);
  try {
    removeMemoryIndex({ sqlite, memoryPath });
  } catch (e) {
    log("error", "memory file deleted but its index update failed", { store, memoryPath, error: String(e) });
    throw new AppError("internal", `memory ${memoryPath} was deleted but the index update failed; run a reindex of store ${store}`);
  }
}

/** The memory as its file says now (the file is the source of truth). */
export function getMemoryByPath({ store, memoryPath }: { store: string; memoryPath: string }): MemoryWithBody {
  const file = memoryFile(store, memoryPath);
  let read: { bytes: Buffer; mtimeMs: number };
  try {
    read = readFileNoFollow(file, `memory ${memoryPath}`);
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("not_found", `no memory ${memoryPath}`);
  }
  return memoryFromText({ memoryPath, text: read.bytes.toString("utf8"), mtime: read.mtimeMs });
}

// ---- queries -----------------------------------------------------------------

export const memoryFilterSchema = z
  .object({
    category: categoryPathSchema.optional(),
    tags: csvParam.optional(),
    updated_after: dateParam.optional(),
    updated_before: dateParam.optional(),
    source: z.string().max(200).optional(),
    sort: z.enum(["updated_at", "created_at", "token_estimate"]).default("updated_at").transform((s) => ({ updated_at: "updatedAt", created_at: "createdAt", token_estimate: "tokenEstimate" } as const)[s]),
    order: z.enum(["asc", "desc"]).default("desc"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    include_expired: boolParam.default(false),
  })
  .strict();

export type MemoryFilter = z.output<typeof memoryFilterSchema>;

const SORT_COLUMNS = { updatedAt: "updated_at", createdAt: "created_at", tokenEstimate: "token_estimate" } as const;

type MemorySqlRow = { path: string; category: string; tags: string; token_estimate: number; source: string | null; created_at: number; updated_at: number; expires_at: number | null; summary: string | null };

function toMemory(r: MemorySqlRow): Memory {
  return {
    path: r.path,
    category: r.category,
    slug: r.path.slice(r.path.lastIndexOf("/") + 1),
    tags: JSON.parse(r.tags) as string[],
    tokenEstimate: r.token_estimate,
    source: r.source,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    expiresAt: r.expires_at,
    summary: r.summary,
  };
}

export function listMemoriesByFilter({ sqlite, filter, now = Date.now() }: { sqlite: Database.Database; filter: MemoryFilter; now?: number }): { total: number; memories: Memory[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (filter.category) {
    where.push("(category = ? or substr(category, 1, length(?) + 1) = ? || '/')");
    args.push(filter.category, filter.category, filter.category);
  }
  if (filter.tags && filter.tags.length > 0) {
    where.push(`exists (select 1 from json_each(memories.tags) t where t.value in (${filter.tags.map(() => "?").join(", ")}))`);
    args.push(...filter.tags);
  }
  if (filter.updated_after !== undefined) {
    where.push("updated_at >= ?");
    args.push(filter.updated_after);
  }
  if (filter.updated_before !== undefined) {
    where.push("updated_at < ?");
    args.push(filter.updated_before);
  }
  if (filter.source !== undefined) {
    where.push("source = ?");
    args.push(filter.source);
  }
  if (!filter.include_expired) {
    where.push("(expires_at is null or expires_at > ?)");
    args.push(now);
  }
  const clause = where.length ? `where ${where.join(" and ")}` : "";
  const total = (sqlite.prepare(`select count(*) as n from memories ${clause}`).get(...args) as { n: number }).n;
  // The sort column comes from a fixed map, never from the request text.
  const order = `${SORT_COLUMNS[filter.sort]} ${filter.order === "asc" ? "asc" : "desc"}, path asc`;
  const rows = sqlite.prepare(`select * from memories ${clause} order by ${order} limit ? offset ?`).all(...args, filter.limit, filter.offset) as MemorySqlRow[];
  return { total, memories: rows.map(toMemory) };
}

export function listRecentMemories({ sqlite, limit = 10, now = Date.now() }: { sqlite: Database.Database; limit?: number; now?: number }): Memory[] {
  return listMemoriesByFilter({ sqlite, now, filter: memoryFilterSchema.parse({ limit: String(limit) }) }).memories;
}

export type CategoryChild = { path: string; name: string; description: string | null; memories: number; children: number };

/** Categories with recursive memory counts (expired ones included): the children of `parent`, or all when `parent` is undefined. */
function listCategories(sqlite: Database.Database, parent: string | null | undefined): CategoryChild[] {
  const rows = sqlite
    .prepare(
      `select c.path, c.description,
         (select count(*) from memories m where m.category = c.path or substr(m.category, 1, length(c.path) + 1) = c.path || '/') as memories,
         (select count(*) from categories k where k.parent_path = c.path) as children
       from categories c ${parent === undefined ? "" : "where c.parent_path is ?"} order by c.path`,
    )
    .all(...(parent === undefined ? [] : [parent])) as { path: string; description: string | null; memories: number; children: number }[];
  return rows.map((r) => ({ ...r, name: r.path.slice(r.path.lastIndexOf("/") + 1) }));
}

export function listCategoryChildren({ sqlite, parent }: { sqlite: Database.Database; parent: string | null }): CategoryChild[] {
  return listCategories(sqlite, parent);
}

export function listAllCategories({ sqlite }: { sqlite: Database.Database }): CategoryChild[] {
  return listCategories(sqlite, undefined);
}

export const setCategorySchema = z.object({ path: categoryPathSchema, description: z.string().trim().max(2000) }).strict();

/**
 * Describe a category. The description lives in memory/<category>/_category.md
 * (file first, like memories), then in the categories row; an empty
 * description removes the file.
 */
export function setCategoryDescription({ store, sqlite, input }: { store: string; sqlite: Database.Database; input: z.output<typeof setCategorySchema> }): CategoryChild {
  const file = categoryFile(store, input.path);
  if (input.description === "") fs.rmSync(file, { force: true });
  else writeFileAtomic(file, input.description + "\n");
  sqlite.transaction(() => {
    ensureCategoryPath({ sqlite, category: input.path });
    sqlite.prepare("update categories set description = ? where path = ?").run(input.description || null, input.path);
    pruneCategories({ sqlite });
  }).immediate();
  const parent = input.path.includes("/") ? input.path.slice(0, input.path.lastIndexOf("/")) : null;
  return listCategoryChildren({ sqlite, parent }).find((c) => c.path === input.path) ?? { path: input.path, name: input.path.slice(input.path.lastIndexOf("/") + 1), description: null, memories: 0, children: 0 };
}
