import { createHash, randomUUID } from "node:crypto";
import { z } from "zod";
import { AppError, isAppError } from "../errors";

/** Client-supplied ids make retried POSTs idempotent; a uuid fits this pattern too. */
export const clientIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or - (a uuid fits)");

/** An agent id as tokens carry it (`agent_id`): task assignees and dialectic reviewers name agents this way. */
export const agentIdSchema = z.string().trim().min(1).max(100).regex(/^[A-Za-z0-9._:@-]+$/, "letters, digits and . _ : @ - only");

export const sha256HexSchema = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, "must be a hex sha256 (64 hex digits)")
  .transform((s) => s.toLowerCase());

export const epochMsSchema = z.number().int().min(0).max(8.64e15);

export function newId(): string {
  return randomUUID();
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** JSON with object keys sorted, so equal values serialize identically (idempotency, signatures). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export function parseJsonColumn<T = unknown>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/**
 * A retry with the same client id must carry the same facts; anything else is
 * a different request reusing an id, which the caller must hear about.
 */
export function assertSameRetry(kind: string, id: string, stored: unknown, incoming: unknown): void {
  if (canonicalJson(stored) !== canonicalJson(incoming)) {
    throw new AppError("conflict", `${kind} ${id} already exists with different contents`, [{ path: "id", message: "reuse an id only to retry the identical request" }]);
  }
}

/** Escape LIKE wildcards so user text is matched literally (used with ESCAPE '\'). */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Form GETs send empty fields as ""; a filter left blank means "no filter". */
export function filledParams(params: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    const value = Array.isArray(v) ? v[0] : v;
    if (value !== undefined && value.trim() !== "") out[k] = value.trim();
  }
  return out;
}

/** For pages: an unknown id becomes null (the page then answers 404); any other error still throws. */
export function findOrNull<T>(load: () => T): T | null {
  try {
    return load();
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") return null;
    throw e;
  }
}

/** For pages: a client id from the URL, checked, then loaded; a malformed or unknown id is null (the page answers 404). */
export function findByClientId<T>(id: string, load: (id: string) => T): T | null {
  const parsed = clientIdSchema.safeParse(id);
  return parsed.success ? findOrNull(() => load(parsed.data)) : null;
}
