import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { closeAllDatabases } from "@/lib/db/connection";
import { LISTED_TABLES } from "@/lib/index/word-list-upkeep";
import { buildWordLists, wordListScores, wordListsStatus } from "@/lib/retrieval/word-lists";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { itSqliteOnly, onPg, seedStore, useTestBackend, type TestEnv } from "../backend";
import { patience } from "../fixtures/patience";

/**
 * kill -9 of a process building a store's word lists (lib/retrieval/word-lists.ts):
 * the database stays whole, queries get FTS5's exact scores or no answer from
 * the lists (the other paths answer), never a wrong one, and the next build
 * finishes the lists. SQLite only: the lists are tables in index.db derived
 * from FTS5; PostgreSQL ranks with ts_rank.
 */
const WHY_SQLITE_ONLY = "the word lists derive from SQLite's FTS5 index; PostgreSQL ranks with ts_rank";
const WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "rotation", "ledger"];

function note(i: number): string {
  let x = i * 2654435761;
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return `# Note ${i}\n\n${Array.from({ length: 20 + Math.floor(rnd() * 200) }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(" ")}`;
}

let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_EMBED_WORKER: "false" });
  if (onPg) return;
  await seedStore("crash");
  for (let start = 0; start < 1500; start += 500) {
    const documents = Array.from({ length: 500 }, (_, k) => ({ path: `n/${start + k}.md`, content: note(start + k) }));
    await stores().putDocuments({ store: "crash", input: { documents }, actor: "test" });
  }
}, patience(120_000));
afterAll(async () => env?.cleanup());

/** Start the child, wait for its first full build, let it run `afterMs` more, then SIGKILL it. */
async function killChildBuilding(afterMs: number): Promise<void> {
  closeAllDatabases();
  const child = spawn(process.execPath, ["--import", "tsx", path.join("tests", "fixtures", "word-lists-child.ts"), "crash"], { cwd: process.cwd(), env: process.env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("MIDWAY")) resolve();
    });
    child.on("exit", () => reject(new Error(`child exited before MIDWAY: ${out} ${err}`)));
  });
  await new Promise((r) => setTimeout(r, afterMs));
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
}

const db = () => openStore({ store: "crash" }).sqlite;
/** The tables the store's notes fill (its graph and recall tables stay empty: no lists are built for them). */
const SEEDED = LISTED_TABLES.filter((t) => t.table === "chunks_fts" || t.table === "documents_fts");
function expectExactOrNothing(): void {
  for (const { table, texts } of SEEDED) {
    for (const match of ['"rotation" OR "ledger"', '"alpha" "golf"']) {
      const got = wordListScores({ db: db(), schema: "main", table, match, texts: texts?.(db()) });
      if (!got) continue;
      const want = db().prepare(`select rowid as id, -bm25(${table}) as s from ${table} where ${table} match ? order by rowid`).all(match) as { id: number; s: number }[];
      expect(Array.from(got.ids), `${table} ${match}`).toEqual(want.map((r) => r.id));
      expect(Array.from(got.scores), `${table} ${match}`).toEqual(want.map((r) => r.s));
    }
  }
}

describe("word lists crash safety (kill -9)", () => {
  for (const afterMs of [0, 40, 150]) {
    itSqliteOnly(`killed building (${afterMs} ms into a rebuild): the database is whole, answers are exact or left to FTS5, and the next build finishes`, WHY_SQLITE_ONLY, async () => {
      await killChildBuilding(afterMs);
      expect(db().pragma("integrity_check", { simple: true })).toBe("ok");
      expectExactOrNothing();
      for (const { table, texts } of SEEDED) buildWordLists({ db: db(), table, texts: texts?.(db()), minRows: 50, minTableRows: 1 });
      for (const { table } of SEEDED) expect(wordListsStatus({ db: db(), table })).toMatchObject({ status: "ready", pending: 0 });
      expectExactOrNothing();
      for (const { table, texts } of SEEDED) expect(wordListScores({ db: db(), schema: "main", table, match: '"rotation" OR "ledger"', texts: texts?.(db()) }), table).not.toBeNull();
    });
  }
});
