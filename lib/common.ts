/**
 * Small helpers every area shares (ids, hashes, zod fields, JSON columns,
 * user text in SQL). Base layer: imports nothing from lib/ but errors.ts and names.ts.
 */
import { createHash, randomUUID } from "node:crypto";
import { z } from "zod";
import { AppError } from "./errors";

// --- names ---

export { STORE_NAME_RE } from "./names";

// --- ids and hashes ---

export function newId(): string {
  return randomUUID();
}

/** The one sha256: lowercase hex of the UTF-8 text (or the bytes). */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The same sha256 fed in pieces (a table hashed a page at a time): update, then hex once. */
export function sha256Hasher(): { update: (data: string) => void; hex: () => string } {
  const hash = createHash("sha256");
  return { update: (data) => void hash.update(data), hex: () => hash.digest("hex") };
}

/** JSON with object keys sorted, so equal values serialize identically (idempotency, signatures). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

// --- rows as the wire spells them ---

type SnakeCase<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeCase<T>}` : S;
/** A row's type with its camelCase keys spelled snake_case, as the API answers them. */
export type SnakeCased<T> = { [K in keyof T as K extends string ? SnakeCase<K> : K]: T[K] };

/** A row with its keys spelled snake_case (`createdAt` → `created_at`), in the row's key order. */
export function snakeCased<T extends object>(row: T): SnakeCased<T> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v])) as SnakeCased<T>;
}

// --- zod fields ---

/** Client-supplied ids make retried POSTs idempotent; a uuid fits this pattern too. */
export const clientIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or - (a uuid fits)");

/** An agent id as tokens carry it (`agent_id`): task assignees and dialectic reviewers name agents this way. */
export const agentIdSchema = z.string().trim().min(1).max(100).regex(/^[A-Za-z0-9._:@-]+$/, "letters, digits and . _ : @ - only");

export const sha256HexSchema = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, "must be a hex sha256 (64 hex digits)")
  .transform((s) => s.toLowerCase());

export const epochMsSchema = z.number().int().min(0).max(8.64e15);
export const uuidSchema = z.uuid();
export const unitInterval = z.number().min(0).max(1);
export const tagsSchema = z.array(z.string().trim().min(1).max(64)).max(32);
/** The most a JSON object of attributes or frame properties serializes to, in UTF-8 bytes. */
export const JSON_OBJECT_MAX_BYTES = 64 * 1024;
/** A JSON object of small size: attributes, frame properties. */
export const jsonObjectSchema = z
  .record(z.string().min(1).max(128), z.json())
  .refine((o) => Buffer.byteLength(JSON.stringify(o), "utf8") <= JSON_OBJECT_MAX_BYTES, "must serialize to at most 64 KiB of UTF-8 JSON");
/** A count a client numbers things by, stored in a 32-bit column on PostgreSQL. */
export const countSchema = z.number().int().min(1).max(2_147_483_647);
export const limitSchema = z.coerce.number().int().min(1).max(200).default(50);
export const offsetSchema = z.coerce.number().int().min(0).default(0);

/** Tags are kept sorted and unique so equal sets compare and hash equal. */
export function normalizeTags(tags: string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter(Boolean))].sort();
}

// --- JSON columns: two readers, for two needs ---

/**
 * A ledger column (task specs, run artifacts, dialectic conditions): null
 * stays null, and text that does not parse is corruption, so it throws. The
 * ledger is a record of what was said; it never substitutes a guess.
 */
export function parseJsonColumnStrict<T = unknown>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/**
 * A descriptive column read for display and scoring (graph attributes, tags,
 * frame properties, working memory): null or unparsable text reads as
 * `fallback`, so one damaged row cannot fail a whole listing or a remember.
 */
export function parseJsonColumnOr<T>({ text, fallback }: { text: string | null; fallback: T }): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

// --- user text in SQL ---

/** Escape LIKE wildcards so user text is matched literally (used with ESCAPE '\'). */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}


// --- errors ---

/**
 * A retry with the same client id must carry the same facts; anything else is
 * a different request reusing an id, which the caller must hear about.
 */
export function assertSameRetry({ kind, id, stored, incoming }: { kind: string; id: string; stored: unknown; incoming: unknown }): void {
  if (canonicalJson(stored) !== canonicalJson(incoming)) {
    throw new AppError("conflict", `${kind} ${id} already exists with different contents`, [{ path: "id", message: "reuse an id only to retry the identical request" }]);
  }
}

export function notFound({ what, id }: { what: string; id: string }): AppError {
  return new AppError("not_found", `${what} ${id} does not exist`);
}

/**
 * A configured limit was reached. A quota (stores, batch size) is a 422, a
 * rate (alerts per hour) a 429; either way the variable that sets it is named
 * in the message and in `details[0].limit`, so the caller knows what to ask for.
 */
export function limitReached({ limit, message, kind = "quota" }: { limit: string; message: string; kind?: "quota" | "rate" }): AppError {
  return new AppError(kind === "rate" ? "rate_limited" : "unprocessable", `${message} (limit ${limit})`, [{ path: "limit", message, limit }]);
}

/** Let other work (requests, timers) run before continuing: a loop that does synchronous work per item awaits it between items. */
export function letOthersRun(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
