import path from "node:path";
import { openPgHandle, closePgHandle } from "../lib/db/pg";
import { pgStores } from "../lib/stores/backend";
import { putDocumentsSchema } from "../lib/index/ingest";
import { searchInputSchema } from "../lib/index/search";
import { benchPostgres } from "../bench/pg-server";
import { buildDocQuerySet, loadMarkdownCorpus } from "../bench/doc-queries";

async function main() {
  const s = await benchPostgres("diag");
  if (!s) throw new Error("no pg");
  const pg = await openPgHandle({ url: s.url, max: 2 });
  const b = pgStores(pg);
  const set = buildDocQuerySet({ docs: loadMarkdownCorpus({ root: path.resolve("node_modules"), limit: 500 }), count: 300 });
  const docs = set.docs.map((d) => ({ path: `corpus/${d.path}`, content: d.text }));
  await b.createStore({ input: { name: "q" }, actor: "x" });
  let t = performance.now();
  for (let i = 0; i < docs.length; i += 100) await b.putDocuments({ store: "q", input: putDocumentsSchema.parse({ documents: docs.slice(i, i + 100) }), actor: "x" });
  console.log("ingest ms", performance.now() - t);
  for (const params of [{ mode: "fts", match: "any", group: "chunk" }, { mode: "fts", match: "any", group: "document" }, { mode: "fts" }]) {
    const times: number[] = [];
    for (const q of set.queries.slice(0, 60)) {
      t = performance.now();
      try {
        const r = await b.search({ store: "q", input: searchInputSchema.parse({ q: q.q, limit: 10, explain: true, ...params }) });
        const ms = performance.now() - t;
        times.push(ms);
        if (ms > 150) console.log(Math.round(ms), JSON.stringify(params), q.q.slice(0, 80), r.explain?.stages.map((x) => `${x.stage}:${x.ms}:${x.detail.slice(0, 160)}`).join(" | "));
      } catch (e) { console.log("ERR", (e as Error).message.slice(0, 80), q.q.slice(0, 80)); }
    }
    times.sort((a, b) => a - b);
    console.log(JSON.stringify(params), "p50", times[Math.floor(times.length / 2)], "p95", times[Math.floor(times.length * 0.95)]);
  }
  await closePgHandle(pg);
  s.server?.stop();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
