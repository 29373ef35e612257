/**
 * One checkout's side of bench/side-by-side.bench.ts: a child process started
 * in that checkout (cwd) with BENCH_CHECKOUT naming it and DATA_DIR its own
 * store directory. It loads the checkout's own lib (never this one's), builds
 * the store from the corpus file the parent wrote (documents, traces,
 * thoughts and nodes; every vector by the real worker, word lists and HNSW
 * built before timing, as a server's background upkeep leaves them), then
 * answers the parent's batches of queries with each call's wall time and
 * the process's CPU time during it.
 *
 * It imports nothing from this checkout's lib, only node built-ins and the
 * lib-free bench/side-by-side-data.ts, so two checkouts never share a module.
 */
import fs from "node:fs";
import path from "node:path";
import { syntheticTrace } from "./side-by-side-data";

type Message =
  | { op: "build"; size: number; corpusFile: string; parts: string[] }
  | { op: "query"; id: number; kind: "search" | "recall" | "remember"; inputs: Record<string, unknown>[] }
  | { op: "exit" };

const ROOT = path.resolve(process.env.BENCH_CHECKOUT ?? ".");
const STORE = "bench";

/* The checkout's modules, loaded by path: their own relative imports stay inside that checkout. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- two checkouts' signatures differ; each call passes what both accept
type Loose = any;
const lib = async (rel: string): Promise<Loose> => import(path.join(ROOT, "lib", rel));
const optionalLib = async (rel: string): Promise<Loose> => (fs.existsSync(path.join(ROOT, "lib", rel)) ? lib(rel) : {});

async function main() {
  const { resetConfigForTests } = await lib("config.ts");
  resetConfigForTests();
  (await optionalLib("embeddable-kinds.ts")).registerEmbeddableKinds?.();
  const connection = await lib("db/connection.ts");
  const { closeAllDatabases } = connection;
  // Earlier checkouts take the store's name alone.
  const getStoreDb = ({ store }: { store: string }) => (/^function getStoreDb\(\{/.test(String(connection.getStoreDb)) ? connection.getStoreDb({ store }) : connection.getStoreDb(store));
  const { openStore } = await lib("stores/stores.ts");
  const { drainEmbedQueues } = await lib("embed/worker.ts");
  const { buildAnnIndex } = await lib("embed/ann-index.ts");
  const { getEmbedder } = await lib("embed/model.ts");
  const { ingestDocument } = await lib("index/ingest.ts");
  const { wordListUpkeepTurn } = await lib("index/word-list-upkeep.ts");
  const { searchInputSchema, searchStore } = await lib("index/search.ts");
  const { recordTrace } = await lib("recall/traces.ts");
  const { recallReflections } = await lib("recall/recall.ts");
  const { thinkThought } = await lib("graph/thoughts.ts");
  const { createNode } = await lib("graph/nodes.ts");
  const { rememberByQuery } = await lib("graph/remember.ts");
  // Engines exist in later checkouts only; an earlier one ignores the extra argument.
  const { sqliteRecall } = await optionalLib("recall/engines/sqlite.ts");
  const { sqliteRemember } = await optionalLib("graph/engines/sqlite.ts");

  const send = (m: unknown) => process.send!(m);

  async function build(size: number, corpusFile: string, parts: string[]) {
    const marker = path.join(process.env.DATA_DIR!, `built-${size}-${parts.join("-")}.json`);
    if (fs.existsSync(marker)) {
      getStoreDb({ store: STORE });
      return { reused: true, ...JSON.parse(fs.readFileSync(marker, "utf8")) };
    }
    const texts = JSON.parse(fs.readFileSync(corpusFile, "utf8")) as string[];
    const handle = getStoreDb({ store: STORE });
    const seconds: Record<string, number> = {};
    const timed = async (label: string, fn: () => unknown) => {
      const started = performance.now();
      await fn();
      seconds[label] = Math.round((performance.now() - started) / 100) / 10;
      process.stderr.write(`[${process.env.BENCH_LABEL}] ${size}: ${label} ${seconds[label]} s\n`);
    };
    // A build stopped part way resumes: rows are written in order, a batch per transaction, so the rows a table holds are the first ones.
    const written = (table: string) => (handle.sqlite.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    const inBatches = (n: number, write: (i: number) => void, from = 0) => {
      for (let at = from; at < n; at += 1000) handle.sqlite.transaction(() => { for (let i = at; i < Math.min(n, at + 1000); i++) write(i); })();
    };
    const drain = () => drainEmbedQueues({ stores: [STORE], batchSize: 512 });
    // Recall and remember alone need no documents (a store kept from a search-only build has them already).
    if (parts.includes("search")) {
      await timed("documents written", () => inBatches(size, (i) => ingestDocument({ handle, path: `bench/w${String(i).padStart(6, "0")}.txt`, origin: "api", text: texts[i % texts.length], mtime: 0 })));
      await timed("documents embedded", drain);
    }
    if (parts.includes("recall")) {
      await timed("traces written", () => inBatches(size, (i) => recordTrace({ handle, agentId: "bench", input: syntheticTrace(i) }), written("reasoning_traces")));
      await timed("traces embedded", drain);
    }
    if (parts.includes("remember")) await timed("thoughts and nodes written", () => {
      inBatches(size, (i) => thinkThought({ handle, input: { content: texts[(size - 1 - i) % texts.length], framework: i % 5 === 0 ? "debug" : "conversation", chain_id: `chain-${i % 500}`, timestamp: 1_790_000_000_000 + i * 60_000 }, actor: "bench" }), written("thoughts"));
      const nodesFrom = written("kg_node");
      inBatches(Math.floor(size / 10), (i) => {
        const words = texts[(i * 7) % texts.length].split(/\s+/).filter((w) => /^[A-Za-z]{4,}$/.test(w)).slice(0, 3);
        createNode({ handle, input: { name: `${words.join(" ") || "node"} ${i}`, entity_type: "concept" }, actor: "bench" });
      }, nodesFrom);
    });
    if (parts.includes("remember")) await timed("thoughts and nodes embedded", drain);
    await timed("word lists built", () => {
      while (wordListUpkeepTurn());
    });
    await timed("HNSW built", async () => {
      const fp = await getEmbedder().fingerprint;
      const kinds = [...(parts.includes("search") ? ["chunk"] : []), ...(parts.includes("recall") ? ["trace", "learning"] : []), ...(parts.includes("remember") ? ["thought", "node"] : [])];
      for (const kind of kinds) buildAnnIndex({ source: { db: handle.sqlite, schema: "main" }, fingerprintId: fp.id, kind, dim: fp.dimension });
    });
    handle.sqlite.pragma("wal_checkpoint(TRUNCATE)");
    fs.writeFileSync(marker, JSON.stringify(seconds));
    return { reused: false, ...seconds };
  }

  async function one(kind: string, input: Record<string, unknown>) {
    const handle = openStore({ store: STORE });
    if (kind === "search") return searchStore({ handle, core: null, input: searchInputSchema.parse({ limit: 10, ...input }) });
    if (kind === "recall") return recallReflections({ engine: sqliteRecall, handle, agentId: "bench", input });
    return rememberByQuery({ engine: sqliteRemember, handle, core: null, input });
  }

  process.on("message", (m: Message) => {
    void (async () => {
      try {
        if (m.op === "build") send({ op: "built", result: await build(m.size, m.corpusFile, m.parts) });
        else if (m.op === "query") {
          const ms: number[] = [];
          const cpuMs: number[] = [];
          for (const input of m.inputs) {
            const started = performance.now();
            const cpu = process.cpuUsage();
            await one(m.kind, input);
            ms.push(performance.now() - started);
            const used = process.cpuUsage(cpu);
            cpuMs.push((used.user + used.system) / 1000);
          }
          send({ op: "answered", id: m.id, ms, cpuMs });
        } else {
          closeAllDatabases();
          process.exit(0);
        }
      } catch (e) {
        send({ op: "failed", error: e instanceof Error ? `${e.message}\n${e.stack}` : String(e) });
      }
    })();
  });
  send({ op: "ready" });
}

void main();
