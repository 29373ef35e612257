/**
 * What the transaction port (lib/db/port.ts) costs on SQLite's graph paths,
 * side by side in one run:
 * - direct: the query written straight on Drizzle's SQLite builder, as the
 *   repositories were before the port;
 * - port, sync: the repository's operation driven synchronously (what every
 *   SQLite caller gets);
 * - port, awaited per step: the same operation with an `await` on every step,
 *   what an "async on both engines" port would cost on SQLite (measured only:
 *   the port does not run this way, since other requests could interleave on
 *   the shared connection between the awaits);
 * - backend: the sync operation behind graphBackend()'s async method (routes and MCP).
 * The writes queue each node's vector; nothing embeds them here.
 * Each path runs in rounds, interleaved, and reports the median µs per call.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { and, asc, count, desc, eq } from "drizzle-orm";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, type StoreHandle } from "../lib/db/connection";
import { read, row, type Op } from "../lib/db/port";
import { enqueueEmbeddings } from "../lib/embed/queue";
import { graphTables } from "../lib/graph/tables";
import { kgFrames, kgNodes, kgRelations } from "../lib/db/schema/graph";
import { SQLITE_ENGINE } from "../lib/db/engine";
import { graphOn } from "../lib/graph/backend";

const sqliteGraph = graphOn(SQLITE_ENGINE);
import { createFrame, getFrameById, listFramesByNodeId, toGraphFrame } from "../lib/graph/frames";
import { createNode, createNodeInputSchema, newNodeRow, NODE_KIND, requireNode, toGraphNode } from "../lib/graph/nodes";
import { createOrMergeRelation, listRelationsByNodeId, toGraphRelation } from "../lib/graph/relations";
import { createStore, openStore } from "../lib/stores/stores";
import { printTable } from "./table";

const ROUNDS = 11;
const READS_PER_ROUND = 2_000;

async function driveAwaitingEachStep<T>(handle: StoreHandle, op: Op<T>): Promise<T> {
  let next = op.next();
  while (!next.done) next = op.next(await next.value.sqlite(handle));
  return next.value;
}

function* frameById(id: string) {
  const found = yield* row(graphTables.kgFrames, (t) => eq(t.id, id));
  return toGraphFrame(found!);
}

/** The create as it was written before the port: check, insert, queue the vector, in one immediate transaction. */
function createNodeDirect(handle: StoreHandle, name: string) {
  const n = createNodeInputSchema.parse({ name, entity_type: "tool" });
  const values = newNodeRow({ input: n, actor: "bench", now: Date.now() });
  return handle.sqlite
    .transaction(() => {
      const existing = handle.db.select({ id: kgNodes.id }).from(kgNodes).where(and(eq(kgNodes.name, values.name), eq(kgNodes.entityType, n.entity_type))).get();
      if (existing) throw new Error("exists");
      const created = handle.db.insert(kgNodes).values(values).returning().get();
      enqueueEmbeddings({ handle, items: [{ kind: NODE_KIND, refId: created.seq, inputHash: values.embedHash }] });
      return toGraphNode(created);
    })
    .immediate();
}

/** A node's detail parts (the node, its frames and relations both ways, each page with its count): seven steps. */
function* detailParts(id: string) {
  const node = toGraphNode(yield* requireNode(id));
  const frames = yield* listFramesByNodeId({ nodeId: id, limit: 100 });
  const relations = yield* listRelationsByNodeId({ nodeId: id, limit: 200 });
  return { node, frames, relations };
}

/** The same reads straight on Drizzle's SQLite builder. */
function detailPartsDirect(handle: StoreHandle, id: string) {
  const { db } = handle;
  const node = toGraphNode(db.select().from(kgNodes).where(eq(kgNodes.id, id)).get()!);
  const frames = db.select().from(kgFrames).where(eq(kgFrames.nodeId, id)).orderBy(asc(kgFrames.column), asc(kgFrames.createdAt), asc(kgFrames.id)).limit(100).all().map(toGraphFrame);
  const framesTotal = db.select({ n: count() }).from(kgFrames).where(eq(kgFrames.nodeId, id)).get()!.n;
  const side = (at: typeof kgRelations.fromId | typeof kgRelations.toId) => ({
    rows: db.select().from(kgRelations).where(eq(at, id)).orderBy(desc(kgRelations.weight), asc(kgRelations.id)).limit(200).all().map(toGraphRelation),
    total: db.select({ n: count() }).from(kgRelations).where(eq(at, id)).get()!.n,
  });
  const out = side(kgRelations.fromId);
  const inc = side(kgRelations.toId);
  return { node, frames, framesTotal, out, inc };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timeRounds(paths: Record<string, () => unknown>, perRound: number): Promise<Record<string, number>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(paths)) {
      const started = performance.now();
      for (let i = 0; i < perRound; i++) {
        const r = run();
        if (r instanceof Promise) await r;
      }
      samples[name].push(((performance.now() - started) * 1000) / perRound);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
}

export default async function portBench(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dm-port-bench-"));
  process.env.DATA_DIR = dir;
  resetConfigForTests();
  try {
    createStore({ input: { name: "bench" }, actor: "bench" });
    const handle = openStore({ store: "bench" });
    const hub = createNode({ handle, input: { name: "hub", entity_type: "system" }, actor: "bench" });
    let frameId = "";
    for (let i = 0; i < 20; i++) frameId = createFrame({ handle, input: { node_id: hub.id, column: "semantic", properties: { i } }, actor: "bench" }).id;
    for (let i = 0; i < 40; i++) {
      const other = createNode({ handle, input: { name: `leaf ${i}`, entity_type: "concept" }, actor: "bench" });
      createOrMergeRelation({ handle, input: { from_id: hub.id, to_id: other.id, relationship_type: "uses", weight: (i % 10) / 10 }, actor: "bench" });
    }

    const frame = await timeRounds(
      {
        direct: () => toGraphFrame(handle.db.select().from(kgFrames).where(eq(kgFrames.id, frameId)).get()!),
        "port, sync": () => getFrameById({ handle, id: frameId }),
        "port, awaited per step": () => driveAwaitingEachStep(handle, frameById(frameId)),
        backend: () => sqliteGraph.getFrame({ store: "bench", id: frameId }),
      },
      READS_PER_ROUND,
    );
    const detail = await timeRounds(
      {
        direct: () => detailPartsDirect(handle, hub.id),
        "port, sync": () => read(handle, detailParts(hub.id)),
        "port, awaited per step": () => driveAwaitingEachStep(handle, detailParts(hub.id)),
      },
      READS_PER_ROUND / 10,
    );
    let n = 0;
    const writes = await timeRounds(
      {
        direct: () => createNodeDirect(handle, `w ${n++}`),
        "port, sync": () => createNode({ handle, input: { name: `w ${n++}`, entity_type: "tool" }, actor: "bench" }),
        backend: () => sqliteGraph.createNode({ store: "bench", actor: "bench", input: { name: `w ${n++}`, entity_type: "tool" } }),
      },
      READS_PER_ROUND / 10,
    );
    const row = (what: string, r: Record<string, number>) => ({ path: what, ...Object.fromEntries(Object.entries(r).map(([k, v]) => [`${k} (µs)`, v])) });
    printTable("port: SQLite graph paths, median µs per call", [row("one frame by id (1 step)", frame), row("node detail parts (7 steps)", detail), row("create node (write, 4 steps)", writes)]);
  } finally {
    closeAllDatabases();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
