import { z } from "zod";
import { assertSanitizeBudget, sanitizeJson, sanitizeText } from "./sanitize";
import { supersedesSchema } from "../index/item-state";
import { factPropertySchema, factSubjectSchema, validFromSchema } from "../index/facts";

/**
 * Deterministic text for what gets embedded and deduped: the same structured
 * trace always renders the same descriptor, whatever order its files or tags
 * came in. Changing the rendering bumps the version; re-embed backfills rows
 * of older versions.
 */
export const DESCRIPTOR_VERSION = 1;
export const HANDLE_VERSION = 1;

const MAX_DESCRIPTOR_CHARS = 1000;
const MAX_FILES = 8;
const MAX_TAGS = 12;

const line = (max: number) => z.string().trim().min(1).max(max);

export const intentSchema = z.object({ verb: line(80), target: line(400) }).strict();

export const traceInputSchema = z
  .object({
    intent: intentSchema,
    shard_type: line(80),
    key_files: z.array(line(400)).max(100).default([]),
    outcome: z.enum(["success", "failure"]),
    key_issue: z.string().trim().max(2000).default(""),
    error_tags: z.array(line(80)).max(100).default([]),
  })
  .strict();
export type TraceInput = z.input<typeof traceInputSchema>;

export const learningInputSchema = z
  .object({
    predicate: line(120),
    args: z.record(z.string().max(120), z.union([z.string().max(2000), z.number(), z.boolean(), z.null()])).default({}),
    description: z.string().trim().max(4000).default(""),
    confidence: z.number().min(0).max(1).default(0.5),
    semantic_handle: z.string().trim().min(1).max(1000).optional(),
    /** Governed memory: the id of the learning this one replaces (retired, kept, linked). */
    supersedes: supersedesSchema,
    /** Governed memory (lib/index/facts.ts): what the learning is about and which property of it; a new value supersedes the old. */
    subject: factSubjectSchema.optional(),
    property: factPropertySchema.optional(),
    /** When it became true (epoch ms; default now). */
    valid_from: validFromSchema.optional(),
  })
  .strict();
export type LearningInput = z.input<typeof learningInputSchema>;

/** Collapse whitespace and keep the `|` field separator unambiguous. */
function clean(text: string, max: number): string {
  const s = text.replace(/\s+/g, " ").replace(/\|/g, "/").trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function normalizedPath(p: string): string {
  return clean(p.replace(/\\/g, "/").replace(/^\.\//, ""), 200);
}

/** The sanitized, normalized fields of a trace, exactly as stored. */
export type TraceFields = {
  intentVerb: string;
  intentTarget: string;
  shardType: string;
  keyFiles: string[];
  outcome: "success" | "failure";
  keyIssue: string;
  errorTags: string[];
};

export function normalizeTrace(input: z.output<typeof traceInputSchema>): TraceFields {
  assertSanitizeBudget(input, "the trace");
  return {
    intentVerb: clean(sanitizeText(input.intent.verb), 40).toLowerCase(),
    intentTarget: clean(sanitizeText(input.intent.target), 200),
    shardType: clean(sanitizeText(input.shard_type), 40).toLowerCase(),
    keyFiles: [...new Set(input.key_files.map((f) => normalizedPath(sanitizeText(f))))].sort().slice(0, MAX_FILES),
    outcome: input.outcome,
    keyIssue: clean(sanitizeText(input.key_issue), 300),
    errorTags: [...new Set(input.error_tags.map((t) => clean(sanitizeText(t), 40).toLowerCase()))].sort().slice(0, MAX_TAGS),
  };
}

/**
 * `Intent: verb|target | Shard: type | Files: a, b | Outcome: failure | Key Issue: ... | Tags: x, y`.
 */
export function renderTraceDescriptor(f: TraceFields): string {
  const parts = [
    `Intent: ${f.intentVerb}|${f.intentTarget}`,
    f.shardType ? `Shard: ${f.shardType}` : null,
    f.keyFiles.length ? `Files: ${f.keyFiles.join(", ")}` : null,
    `Outcome: ${f.outcome}`,
    f.keyIssue ? `Key Issue: ${f.keyIssue}` : null,
    f.errorTags.length ? `Tags: ${f.errorTags.join(", ")}` : null,
  ].filter((p): p is string => p !== null);
  const text = parts.join(" | ");
  return text.length > MAX_DESCRIPTOR_CHARS ? `${text.slice(0, MAX_DESCRIPTOR_CHARS - 1)}…` : text;
}

/**
 * The text a recall embeds for an intent: the descriptor's values without its
 * field labels. Every stored descriptor carries the labels, so a labelled
 * query would look a little similar to all of them, related or not.
 */
export function renderIntentQuery(f: Omit<TraceFields, "outcome">): string {
  return [`${f.intentVerb} ${f.intentTarget}`, f.shardType, f.keyFiles.join(", "), f.keyIssue, f.errorTags.join(", ")].filter((p) => p !== "").join(" | ");
}

/** The sanitized fields of a learning and its handle. */
export type LearningFields = { predicate: string; args: Record<string, unknown>; description: string; confidence: number; semanticHandle: string };

function sortedArgs(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(args).sort().map((k) => [k, args[k]]));
}

/** A handle given by the agent wins; otherwise one is synthesized from predicate, args and description. */
export function normalizeLearning(input: z.output<typeof learningInputSchema>): LearningFields {
  assertSanitizeBudget(input, "the learning");
  const predicate = clean(sanitizeText(input.predicate), 120);
  const args = sortedArgs(sanitizeJson(input.args) as Record<string, unknown>);
  const description = clean(sanitizeText(input.description), 1000);
  const given = input.semantic_handle ? clean(sanitizeText(input.semantic_handle), MAX_DESCRIPTOR_CHARS) : null;
  return { predicate, args, description, confidence: input.confidence, semanticHandle: given ?? renderLearningHandle({ predicate, args, description }) };
}

export function renderLearningHandle(l: { predicate: string; args: Record<string, unknown>; description: string }): string {
  const argText = Object.entries(sortedArgs(l.args))
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
  const parts = [`Learning: ${l.predicate.replace(/[_.-]+/g, " ")}`, argText ? `Args: ${argText}` : null, l.description ? `Description: ${l.description}` : null].filter(
    (p): p is string => p !== null,
  );
  const text = parts.join(" | ");
  return text.length > MAX_DESCRIPTOR_CHARS ? `${text.slice(0, MAX_DESCRIPTOR_CHARS - 1)}…` : text;
}
