import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import type { Embeddable } from "../embed/embeddables";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings } from "../embed/vector-index";
import { AppError } from "../errors";
import type { VectorInfo } from "./traces";
import { HANDLE_VERSION, learningInputSchema, normalizeLearning, renderLearningHandle, type LearningInput } from "./descriptors";
import { sha256Hex } from "../common";

export const LEARNING_KIND = "learning";

type LearningDbRow = {
  id: number;
  agent_id: string;
  predicate: string;
  args: string;
  description: string;
  confidence: number;
  semantic_handle: string;
  handle_version: number;
  handle_hash: string;
  seen_count: number;
  created_at: number;
  last_seen_at: number;
  vector_info: string | null;
};

export type Learning = {
  id: number;
  agentId: string;
  predicate: string;
  args: Record<string, unknown>;
  description: string;
  confidence: number;
  semanticHandle: string;
  handleVersion: number;
  handleHash: string;
  embedding: "vector" | "pending";
  vector: VectorInfo | null;
  seenCount: number;
  createdAt: number;
  lastSeenAt: number;
};

const LEARNING_COLUMNS =
  "l.*, (select json_object('fingerprintId', e.fingerprint_id, 'dim', e.dim, 'task', e.task) from embeddings e where e.kind = 'learning' and e.ref_id = l.id and e.input_hash = l.handle_hash order by e.id desc limit 1) as vector_info";

function toLearning(r: LearningDbRow): Learning {
  return {
    id: r.id,
    agentId: r.agent_id,
    predicate: r.predicate,
    args: JSON.parse(r.args) as Record<string, unknown>,
    description: r.description,
    confidence: r.confidence,
    semanticHandle: r.semantic_handle,
    handleVersion: r.handle_version,
    handleHash: r.handle_hash,
    embedding: r.vector_info ? "vector" : "pending",
    vector: r.vector_info ? (JSON.parse(r.vector_info) as VectorInfo) : null,
    seenCount: r.seen_count,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
  };
}

export const learningEmbeddable: Embeddable = {
  kind: LEARNING_KIND,
  artifactType: "learning",
  load({ handle: { sqlite }, refIds }) {
    const rows = sqlite
      .prepare("select id, semantic_handle as text, handle_hash as hash from learnings where id in (select value from json_each(?))")
      .all(JSON.stringify(refIds)) as { id: number; text: string; hash: string }[];
    return new Map(rows.map((r) => [r.id, { text: r.text, inputHash: r.hash }]));
  },
  *listAll({ handle: { sqlite } }) {
    for (const r of sqlite.prepare("select id, handle_hash as hash from learnings").iterate() as IterableIterator<{ id: number; hash: string }>) {
      yield { refId: r.id, inputHash: r.hash };
    }
  },
  chunkingVersion: ({ handle: { sqlite }, refId }) => (sqlite.prepare("select handle_version as v from learnings where id = ?").get(refId) as { v: number } | undefined)?.v ?? null,
  backfill: ({ handle }) => backfillLearningHandles(handle),
};

export type RecordLearningResult = { learning: Learning; deduped: boolean; embedding: "queued" | "unchanged" };

/**
 * Store a learning (sanitized). The same handle again bumps the counter and
 * last_seen, and keeps the higher confidence, instead of adding a vector.
 */
export function recordLearning({ handle, agentId, input }: { handle: StoreHandle; agentId: string; input: LearningInput }): RecordLearningResult {
  const fields = normalizeLearning(learningInputSchema.parse(input));
  const hash = sha256Hex(fields.semanticHandle);
  const { sqlite } = handle;
  return sqlite
    .transaction((): RecordLearningResult => {
      const now = Date.now();
      const existing = sqlite.prepare("select id from learnings where handle_hash = ?").get(hash) as { id: number } | undefined;
      if (existing) {
        sqlite.prepare("update learnings set seen_count = seen_count + 1, last_seen_at = ?, confidence = max(confidence, ?) where id = ?").run(now, fields.confidence, existing.id);
        return { learning: getLearningById({ handle, id: existing.id }), deduped: true, embedding: "unchanged" };
      }
      const { id } = sqlite
        .prepare(
          `insert into learnings(agent_id, predicate, args, description, confidence, semantic_handle, handle_version, handle_hash, seen_count, created_at, last_seen_at)
           values (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) returning id`,
        )
        .get(agentId, fields.predicate, JSON.stringify(fields.args), fields.description, fields.confidence, fields.semanticHandle, HANDLE_VERSION, hash, now, now) as { id: number };
      enqueueEmbeddings({ handle, items: [{ kind: LEARNING_KIND, refId: id, inputHash: hash }] });
      return { learning: getLearningById({ handle, id }), deduped: false, embedding: "queued" };
    })
    .immediate();
}

export function getLearningById({ handle, id }: { handle: StoreHandle; id: number }): Learning {
  const row = handle.sqlite.prepare(`select ${LEARNING_COLUMNS} from learnings l where l.id = ?`).get(id) as LearningDbRow | undefined;
  if (!row) throw new AppError("not_found", `no learning ${id}`);
  return toLearning(row);
}

export const listLearningsQuerySchema = z
  .object({
    predicate: z.string().trim().min(1).max(120).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();

export function listLearnings({ handle, filter }: { handle: StoreHandle; filter: z.input<typeof listLearningsQuerySchema> }): { learnings: Learning[]; total: number } {
  const f = listLearningsQuerySchema.parse(filter);
  const rows = handle.sqlite
    .prepare(`select ${LEARNING_COLUMNS} from learnings l where (? is null or l.predicate = ?) order by l.last_seen_at desc, l.id desc limit ? offset ?`)
    .all(f.predicate ?? null, f.predicate ?? null, f.limit, f.offset) as LearningDbRow[];
  const { n } = handle.sqlite.prepare("select count(*) as n from learnings where (? is null or predicate = ?)").get(f.predicate ?? null, f.predicate ?? null) as { n: number };
  return { learnings: rows.map(toLearning), total: n };
}

/**
 * Bring handles of an older version up to date (re-embed calls this first).
 * Synthesized handles (they start with "Learning: ") are re-rendered; a handle
 * the agent gave is kept as written. Rows that now match merge into the older.
 */
export function backfillLearningHandles(handle: StoreHandle): number {
  const { sqlite } = handle;
  const stale = sqlite.prepare("select * from learnings where handle_version != ?").all(HANDLE_VERSION) as LearningDbRow[];
  let changed = 0;
  for (const r of stale) {
    const synthesized = r.semantic_handle.startsWith("Learning: ");
    const text = synthesized ? renderLearningHandle({ predicate: r.predicate, args: JSON.parse(r.args) as Record<string, unknown>, description: r.description }) : r.semantic_handle;
    const hash = sha256Hex(text);
    const twin = sqlite.prepare("select id from learnings where handle_hash = ? and id != ?").get(hash, r.id) as { id: number } | undefined;
    if (twin) {
      sqlite.prepare("update learnings set seen_count = seen_count + ?, last_seen_at = max(last_seen_at, ?), confidence = max(confidence, ?) where id = ?").run(r.seen_count, r.last_seen_at, r.confidence, twin.id);
      forgetEmbeddings({ handle, items: [{ kind: LEARNING_KIND, refId: r.id }] });
      sqlite.prepare("delete from learnings where id = ?").run(r.id);
    } else {
      sqlite.prepare("update learnings set semantic_handle = ?, handle_hash = ?, handle_version = ? where id = ?").run(text, hash, HANDLE_VERSION, r.id);
    }
    changed++;
  }
  return changed;
}
