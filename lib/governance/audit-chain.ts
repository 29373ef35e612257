import { sha256Hex } from "../common";
import { getConfig } from "../config";

/**
 * Details as stored: whole up to DUALMIND_AUDIT_DETAIL_MAX_BYTES of JSON;
 * larger ones (a request's text an agent made large) are kept as their
 * beginning, marked truncated with the full size and its sha256, so the log
 * stays bounded per row and still proves what was recorded.
 */
export function auditDetailsText(details: Record<string, unknown> | null | undefined): string | null {
  if (!details) return null;
  const text = JSON.stringify(details);
  const max = getConfig().limits.auditDetailMaxBytes;
  const bytes = Buffer.byteLength(text);
  if (bytes <= max) return text;
  const head = Buffer.from(text).subarray(0, Math.max(0, max - 200)).toString("utf8").replace(/\uFFFD$/, "");
  return JSON.stringify({ truncated: true, bytes, sha256: sha256Hex(text), head });
}

/** The hash chain of the audit log, shared by both backends (no database code here). */
export const AUDIT_GENESIS = "0".repeat(64);

export type AuditChainFields = {
  ts: number;
  actor: string;
  action: string;
  target: string | null;
  reason: string | null;
  details: string | null;
  prevHash: string;
};

export type AuditChainRow = AuditChainFields & { id: number; hash: string };

export type AuditVerification = { ok: true; entries: number } | { ok: false; entries: number; brokenAtId: number; reason: string };

/** What a caller asks to record; the chain adds the time, the previous hash and its own hash. */
export type AuditChainEntry = { actor: string; action: string; target?: string | null; reason?: string | null; details?: Record<string, unknown> | null };

/** The fields of the next row in the chain, hashed by hashAuditEntry: the same on both backends. */
export function auditChainFields({ entry, prevHash }: { entry: AuditChainEntry; prevHash: string | null | undefined }): AuditChainFields {
  return {
    ts: Date.now(),
    actor: entry.actor,
    action: entry.action,
    target: entry.target ?? null,
    reason: entry.reason ?? null,
    details: auditDetailsText(entry.details),
    prevHash: prevHash ?? AUDIT_GENESIS,
  };
}

export function hashAuditEntry(row: AuditChainFields): string {
  // Fixed field order so the chain verifies on any machine.
  const canonical = JSON.stringify([row.prevHash, row.ts, row.actor, row.action, row.target, row.reason, row.details]);
  return sha256Hex(canonical);
}

/**
 * Walk rows in id order (fed in pages by the caller); the first row whose
 * link or hash is wrong is reported. `feed` returns false to stop early.
 */
export class AuditChainVerifier {
  private prev = AUDIT_GENESIS;
  private count = 0;
  private broken: AuditVerification | undefined;

  feed(row: AuditChainRow): boolean {
    if (this.broken) return false;
    if (row.prevHash !== this.prev) this.broken = { ok: false, entries: this.count, brokenAtId: row.id, reason: "prev_hash does not match the previous entry" };
    else if (hashAuditEntry(row) !== row.hash) this.broken = { ok: false, entries: this.count, brokenAtId: row.id, reason: "hash does not match the entry's contents" };
    if (this.broken) return false;
    this.prev = row.hash;
    this.count++;
    return true;
  }

  result(): AuditVerification {
    return this.broken ?? { ok: true, entries: this.count };
  }
}
