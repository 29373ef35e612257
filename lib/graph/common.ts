import { createHash } from "node:crypto";
import { z } from "zod";
import { AppError } from "../errors";

export const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

export const unitInterval = z.number().min(0).max(1);
export const tagsSchema = z.array(z.string().trim().min(1).max(64)).max(32);
/** A JSON object of small size: attributes, frame properties. */
export const jsonObjectSchema = z
  .record(z.string().min(1).max(128), z.json())
  .refine((o) => JSON.stringify(o).length <= 64 * 1024, "must serialize to at most 64 KiB");
export const uuidSchema = z.uuid();
export const limitSchema = z.coerce.number().int().min(1).max(200).default(50);
export const offsetSchema = z.coerce.number().int().min(0).default(0);

export function parseJsonColumn<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** Tags are kept sorted and unique so equal sets compare and hash equal. */
export function normalizeTags(tags: string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter(Boolean))].sort();
}

/**
 * Turn user text into a safe FTS5 query: each word quoted, OR-ed. User text
 * never reaches MATCH raw (no operators, columns or syntax errors).
 */
export function ftsQueryFromText(text: string, maxTerms = 16): string | null {
  const words = [...new Set(text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [])].slice(0, maxTerms);
  if (words.length === 0) return null;
  return words.map((w) => `"${w.replaceAll('"', '""')}"`).join(" OR ");
}

export function notFound(what: string, id: string): AppError {
  return new AppError("not_found", `${what} ${id} does not exist`);
}
