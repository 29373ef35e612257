import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { registerEmbeddableKinds } from "../lib/embeddable-kinds";
import { openStore } from "../lib/stores/stores";
import { planQueryVector, vectorNeighbours } from "../lib/retrieval";
import { knnSourceOf, knnSearch } from "../lib/embed/vector-index";
import { annIndexInfo } from "../lib/embed/ann-index";

Object.assign(process.env, { DATA_DIR: path.join("/tmp/graphkeep", "100000") });
resetConfigForTests();
registerEmbeddableKinds();
async function main() {
  const handle = openStore({ store: "bench" });
  for (const q of ["how do I rotate the backup keys", "kernel socket thread cache", "ledger audit token", "vacuum index replica", "some other query text here"]) {
    let t = performance.now();
    const plan = await planQueryVector({ handle, text: q });
    const tPlan = performance.now() - t;
    if (!plan.ok) { console.log("plan not ok", plan); continue; }
    for (const kind of ["thought", "node"]) {
      t = performance.now();
      const r = knnSearch({ handle, kind, fingerprintId: plan.fingerprint.id, query: plan.vector, k: 25 });
      const tk = performance.now() - t;
      const info = annIndexInfo({ source: { db: handle.sqlite, schema: "main" }, fingerprintId: plan.fingerprint.id, kind });
      console.log(q.slice(0, 20), kind, "plan", tPlan.toFixed(1), "knn", tk.toFixed(1), r.method, JSON.stringify(info));
    }
  }
}
main();
