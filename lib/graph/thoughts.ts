import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { FRAMEWORKS, type ThoughtRow, type ChainRow } from "../db/schema/graph";
import { runWithinBudget, startQueryBudget } from "../db/query-budget";
import type { Embeddable } from "../embed/embeddables";
import { getEmbedder } from "../embed/model";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings, knnSearch } from "../embed/vector-index";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { ftsQueryFromText, limitSchema, normalizeTags, notFound, offsetSchema, parseJsonColumnOr, sha256Hex, tagsSchema, unitInterval } from "../common";

export const THOUGHT_KIND = "thought";
/** Novelty compares a thought with this many thoughts written before it. */
export const NOVELTY_WINDOW = 50;
/** Weight of the newest feedback in the utility moving average. */
export const UTILITY_ALPHA = 0.3;

export const thoughtEmbeddable: Embeddable = {
  kind: THOUGHT_KIND,
  artifactType: THOUGHT_KIND,
  load({ handle: { sqlite }, refIds }) {
    const rows = sqlite.prepare("select seq, content, content_hash from thoughts where seq in (select value from json_each(?))").all(JSON.stringify(refIds)) as { seq: number; content: string; content_hash: string }[];
    return new Map(rows.map((r) => [r.seq, { text: r.content, inputHash: r.content_hash }]));
  },
  *listAll({ handle: { sqlite } }) {
    for (const r of sqlite.prepare("select seq, content_hash from thoughts").iterate() as IterableIterator<{ seq: number; content_hash: string }>) yield { refId: r.seq, inputHash: r.content_hash };
  },
};

export const chainIdSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, "chain ids are 1-128 chars of letters, digits, . _ : -");

export const thinkInputSchema = z
  .object({
    content: z.string().trim().min(1).max(20_000),
    framework: z.enum(FRAMEWORKS).default("conversation"),
    chain_id: chainIdSchema.optional(),
    thought_number: z.number().int().min(1).optional(),
    total_thoughts: z.number().int().min(1).optional(),
    importance: unitInterval.default(0.5),
    relevance: unitInterval.default(0.5),
    consistency: unitInterval.optional(),
    tags: tagsSchema.optional(),
    category: z.string().trim().min(1).max(200).optional(),
    /** Epoch ms of the thought; defaults to now. */
    timestamp: z.number().int().positive().optional(),
  })
  .strict()
  .refine((t) => t.chain_id !== undefined || t.thought_number === undefined, { message: "thought_number needs a chain_id", path: ["thought_number"] })
  .refine((t) => t.total_thoughts === undefined || t.thought_number === undefined || t.total_thoughts >= t.thought_number, { message: "total_thoughts must be ≥ thought_number", path: ["total_thoughts"] });
export type ThinkInput = z.input<typeof thinkInputSchema>;

export const listThoughtsQuerySchema = z
  .object({ chain_id: chainIdSchema.optional(), framework: z.enum(FRAMEWORKS).optional(), q: z.string().trim().min(1).max(500).optional(), limit: limitSchema, offset: offsetSchema })
  .strict();

export const feedbackInputSchema = z.object({ utility: unitInterval }).strict();

export type Thought = {
  id: string;
  content: string;
  framework: ThoughtRow["framework"];
  chain_id: string | null;
  thought_number: number | null;
  total_thoughts: number | null;
  timestamp: number;
  importance: number;
  relevance: number;
  tags: string[];
  category: string | null;
  novelty: number | null;
  consistency: number | null;
  utility: number | null;
  feedback_count: number;
  created_by: string;
  /** pending: queued for a vector; ready: embedded; missing: neither (e.g. parked after errors). */
  embedding: "pending" | "ready" | "missing";
};

type ThoughtSelect = ThoughtRow & { embedding: Thought["embedding"] };

const THOUGHT_COLUMNS = `t.seq, t.id, t.content, t.framework, t.chain_id as chainId, t.thought_number as thoughtNumber, t.total_thoughts as totalThoughts,
  t.timestamp, t.importance, t.relevance, t.tags, t.category, t.novelty, t.consistency, t.utility, t.feedback_count as feedbackCount,
  t.content_hash as contentHash, t.created_by as createdBy,
  case when exists (select 1 from embed_queue q where q.kind = 'thought' and q.ref_id = t.seq and q.parked_at is null) then 'pending'
       when exists (select 1 from embeddings e where e.kind = 'thought' and e.ref_id = t.seq and e.input_hash = t.content_hash) then 'ready'
       else 'missing' end as embedding`;

export function toThought(r: ThoughtSelect): Thought {
  return {
    id: r.id,
    content: r.content,
    framework: r.framework,
    chain_id: r.chainId,
    thought_number: r.thoughtNumber,
    total_thoughts: r.totalThoughts,
    timestamp: r.timestamp,
    importance: r.importance,
    relevance: r.relevance,
    tags: parseJsonColumnOr<string[]>(r.tags, []),
    category: r.category,
    novelty: r.novelty,
    consistency: r.consistency,
    utility: r.utility,
    feedback_count: r.feedbackCount,
    created_by: r.createdBy,
    embedding: r.embedding,
  };
}

function selectThoughtById(handle: StoreHandle, id: string): ThoughtSelect | undefined {
  return handle.sqlite.prepare(`select ${THOUGHT_COLUMNS} from thoughts t where t.id = ?`).get(id) as ThoughtSelect | undefined;
}

/**
 * Write a thought (and its chain's count) in one transaction and queue its
 * vector. BEGIN IMMEDIATE: the chain count and the default thought number
 * are read and written under the write lock, so concurrent writers from
 * other processes never lose a count or reuse a number.
 */
export function thinkThought({ handle, input, actor }: { handle: StoreHandle; input: ThinkInput; actor: string }): Thought {
  const t = thinkInputSchema.parse(input);
  const { sqlite } = handle;
  const now = Date.now();
  const id = randomUUID();
  const contentHash = sha256Hex(t.content);
  sqlite
    .transaction(() => {
      let thoughtNumber: number | null = null;
      if (t.chain_id) {
        sqlite.prepare("insert into chains(id, created_at, updated_at, thought_count) values (?, ?, ?, 0) on conflict(id) do nothing").run(t.chain_id, now, now);
        if (t.thought_number !== undefined) {
          if (sqlite.prepare("select 1 from thoughts where chain_id = ? and thought_number = ?").get(t.chain_id, t.thought_number)) {
            throw new AppError("conflict", `chain ${t.chain_id} already has thought number ${t.thought_number}`);
          }
          thoughtNumber = t.thought_number;
        } else {
          const max = sqlite.prepare("select coalesce(max(thought_number), 0) as n from thoughts where chain_id = ?").get(t.chain_id) as { n: number };
          thoughtNumber = max.n + 1;
        }
      }
      const { seq } = sqlite
        .prepare(
          `insert into thoughts(id, content, framework, chain_id, thought_number, total_thoughts, timestamp, importance, relevance, tags, category, consistency, content_hash, created_by)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning seq`,
        )
        .get(id, t.content, t.framework, t.chain_id ?? null, thoughtNumber, t.total_thoughts ?? null, t.timestamp ?? now, t.importance, t.relevance, JSON.stringify(normalizeTags(t.tags)), t.category ?? null, t.consistency ?? null, contentHash, actor) as { seq: number };
      if (t.chain_id) sqlite.prepare("update chains set thought_count = thought_count + 1, updated_at = ? where id = ?").run(now, t.chain_id);
      enqueueEmbeddings({ handle, items: [{ kind: THOUGHT_KIND, refId: seq, inputHash: contentHash }] });
    })
    .immediate();
  return toThought(selectThoughtById(handle, id)!);
}

/**
 * Fill in novelty for thoughts whose vector has landed since they were
 * written: 1 − max cosine to the NOVELTY_WINDOW thoughts before them (1 for
 * the first thought). Runs on reads, so novelty appears with the vector.
 */
export function computePendingNovelty({ handle, fingerprintId }: { handle: StoreHandle; fingerprintId: string }): number {
  const { sqlite } = handle;
  const ready = sqlite
    .prepare(
      `select t.seq, e.vector from thoughts t join embeddings e on e.kind = 'thought' and e.ref_id = t.seq and e.fingerprint_id = ? and e.input_hash = t.content_hash
       where t.novelty is null order by t.seq limit 500`,
    )
    .all(fingerprintId) as { seq: number; vector: Buffer }[];
  if (ready.length === 0) return 0;
  const previous = sqlite.prepare(
    `select t.seq from thoughts t where t.seq < ? and exists (select 1 from embeddings e where e.kind = 'thought' and e.ref_id = t.seq and e.fingerprint_id = ?)
     order by t.seq desc limit ?`,
  );
  const update = sqlite.prepare("update thoughts set novelty = ? where seq = ? and novelty is null");
  sqlite.transaction(() => {
    for (const r of ready) {
      const ids = (previous.all(r.seq, fingerprintId, NOVELTY_WINDOW) as { seq: number }[]).map((p) => p.seq);
      const query = new Float32Array(r.vector.buffer.slice(r.vector.byteOffset, r.vector.byteOffset + r.vector.byteLength));
      const nearest = ids.length ? knnSearch({ handle, kind: THOUGHT_KIND, fingerprintId, query, k: 1, allowedRefIds: ids }).hits[0] : undefined;
      const novelty = nearest ? Math.min(1, Math.max(0, nearest.distance)) : 1;
      update.run(novelty, r.seq);
    }
  })();
  return ready.length;
}

/** Novelty catch-up for reads; a provider that cannot start leaves novelty pending, never fails the read. */
export async function refreshNovelty(handle: StoreHandle): Promise<void> {
  let fingerprintId: string;
  try {
    fingerprintId = (await getEmbedder().fingerprint).id;
  } catch {
    return;
  }
  computePendingNovelty({ handle, fingerprintId });
}

export async function getThoughtById({ handle, id }: { handle: StoreHandle; id: string }): Promise<Thought> {
  await refreshNovelty(handle);
  const row = selectThoughtById(handle, id);
  if (!row) throw notFound("thought", id);
  return toThought(row);
}

export async function listThoughtsByFilter({ handle, filter }: { handle: StoreHandle; filter: z.input<typeof listThoughtsQuerySchema> }): Promise<{ thoughts: Thought[]; total: number }> {
  const f = listThoughtsQuerySchema.parse(filter);
  await refreshNovelty(handle);
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.chain_id) {
    where.push("t.chain_id = ?");
    args.push(f.chain_id);
  }
  if (f.framework) {
    where.push("t.framework = ?");
    args.push(f.framework);
  }
  if (f.q) {
    const match = ftsQueryFromText(f.q);
    if (!match) return { thoughts: [], total: 0 };
    where.push("t.seq in (select rowid from thoughts_fts where thoughts_fts match ?)");
    args.push(match);
  }
  const clause = where.length ? `where ${where.join(" and ")}` : "";
  const order = f.chain_id ? "t.thought_number, t.seq" : "t.timestamp desc, t.seq desc";
  const page = handle.sqlite.prepare(`select ${THOUGHT_COLUMNS} from thoughts t ${clause} order by ${order} limit ? offset ?`);
  const count = handle.sqlite.prepare(`select count(*) as n from thoughts t ${clause}`);
  // A text filter (`q`) or a deep offset is the caller's to make expensive: both statements share one query budget.
  const budget = startQueryBudget({ hint: "use fewer or rarer words in q, a smaller offset, or filter by chain_id or framework" });
  const rows = runWithinBudget(handle.sqlite, budget, () => page.all(...args, f.limit, f.offset) as ThoughtSelect[]);
  const { n } = runWithinBudget(handle.sqlite, budget, () => count.get(...args) as { n: number });
  return { thoughts: rows.map(toThought), total: n };
}

/** Feedback moves utility as an exponential moving average (first feedback sets it). */
export function recordThoughtFeedback({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof feedbackInputSchema> }): Thought {
  const { utility } = feedbackInputSchema.parse(input);
  const changed = handle.sqlite
    .prepare("update thoughts set utility = case when utility is null then @utility else (1 - @alpha) * utility + @alpha * @utility end, feedback_count = feedback_count + 1 where id = @id")
    .run({ utility, alpha: UTILITY_ALPHA, id }).changes;
  if (changed === 0) throw notFound("thought", id);
  return toThought(selectThoughtById(handle, id)!);
}

/** Delete a thought: its chain count, evidence links (cascade) and vector go with it. */
export function deleteThought({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string } {
  const { sqlite } = handle;
  sqlite
    .transaction(() => {
      const row = sqlite.prepare("select seq, chain_id as chainId from thoughts where id = ?").get(id) as { seq: number; chainId: string | null } | undefined;
      if (!row) throw notFound("thought", id);
      sqlite.prepare("delete from thoughts where seq = ?").run(row.seq);
      if (row.chainId) sqlite.prepare("update chains set thought_count = thought_count - 1, updated_at = ? where id = ?").run(Date.now(), row.chainId);
      forgetEmbeddings({ handle, items: [{ kind: THOUGHT_KIND, refId: row.seq }] });
      appendAudit({ actor, action: "thought.delete", target: `store:${handle.store}/thought:${id}` });
    })
    .immediate();
  return { deleted: id };
}

export type Chain = { id: string; created_at: number; updated_at: number; thought_count: number };

const toChain = (r: ChainRow): Chain => ({ id: r.id, created_at: r.createdAt, updated_at: r.updatedAt, thought_count: r.thoughtCount });

export function listChainsByRecency({ handle, limit = 50, offset = 0 }: { handle: StoreHandle; limit?: number; offset?: number }): { chains: Chain[]; total: number } {
  const rows = handle.sqlite.prepare("select id, created_at as createdAt, updated_at as updatedAt, thought_count as thoughtCount from chains order by updated_at desc, id limit ? offset ?").all(limit, offset) as ChainRow[];
  const { n } = handle.sqlite.prepare("select count(*) as n from chains").get() as { n: number };
  return { chains: rows.map(toChain), total: n };
}

export async function getChainById({ handle, id }: { handle: StoreHandle; id: string }): Promise<Chain & { thoughts: Thought[] }> {
  const row = handle.sqlite.prepare("select id, created_at as createdAt, updated_at as updatedAt, thought_count as thoughtCount from chains where id = ?").get(id) as ChainRow | undefined;
  if (!row) throw notFound("chain", id);
  const { thoughts } = await listThoughtsByFilter({ handle, filter: { chain_id: id, limit: 200 } });
  return { ...toChain(row), thoughts };
}
