import { it } from "vitest";
import fs from "node:fs";
import { bootstrapApp } from "@/lib/bootstrap";
import { getStoreDb, closeAllDatabases } from "@/lib/db/connection";
import { createStore } from "@/lib/stores/stores";
import { putDocuments } from "@/lib/index/ingest";
import { searchInputSchema } from "@/lib/index/search";
import { searchAnyMode } from "@/lib/index/semantic-search";
import { loadTextWindows, noteAt } from "@/bench/corpus";
import { useTempDataDir } from "./helpers";

it("plain mode at 100k chunks", async () => {
  const keep = "/tmp/budget-exp/plain100k";
  const fresh = !fs.existsSync(keep);
  const env = useTempDataDir({ DUALMIND_QUERY_BUDGET_MS: process.env.B ?? "600000", DATA_DIR: keep });
  bootstrapApp();
  if (fresh) {
    createStore({ input: { name: "big" }, actor: "t" });
    const windows = loadTextWindows(175_000);
    const { sqlite } = getStoreDb("big");
    const t = performance.now();
    for (let from = 0; from < 60_000; from += 500) putDocuments({ sqlite, input: { documents: Array.from({ length: 500 }, (_, k) => { const n = noteAt({ windows, index: from + k }); return { path: n.path, content: n.text }; }) } });
    console.log("seed ms", Math.round(performance.now() - t));
  }
  console.log("chunks", getStoreDb("big").sqlite.prepare("select count(*) n from chunks").get());
  const W = "the a of and to in is for that it with as on be this by are or from an you not can if will at use which all type when return function string value default options new used object file".split(" ");
  for (const [label, q, extra] of [
    ["8 common, all", W.slice(0, 8).join(" "), { mode: "fts" }],
    ["8 common, any", W.slice(0, 8).join(" "), { mode: "fts", match: "any" }],
    ["32 common, all", W.join(" "), { mode: "fts" }],
    ["32 common, any", W.join(" "), { mode: "fts", match: "any" }],
    ["32 common, hybrid default", W.join(" "), {}],
    ["natural question, hybrid", "how do I configure the default options for a new file", {}],
  ] as [string, string, Record<string, unknown>][]) {
    const t = performance.now();
    let out = "";
    try { const r = await searchAnyMode({ store: "big", input: searchInputSchema.parse({ q, ...extra }) }); out = `${r.results.length} ${r.effectiveMode}`; } catch (e) { out = (e as { code?: string }).code ?? String(e); }
    console.log(label, Math.round(performance.now() - t), "ms", out);
  }
  closeAllDatabases();
}, 1_800_000);
