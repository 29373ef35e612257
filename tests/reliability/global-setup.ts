import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { printTable } from "../../bench/table";
import { ensureProductionBuild } from "../fixtures/next-server";
import { readTallies, type Tally } from "./summary";

/** Build once for every file's servers, and print the summary table when the suite ends. */
export default function setup() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-reliability-"));
  const file = path.join(dir, "summary.jsonl");
  process.env.RELIABILITY_SUMMARY_FILE = file;
  ensureProductionBuild();
  return () => {
    const rows = readTallies(file);
    const total = rows.reduce<Tally & { area: string }>(
      (acc, r) => {
        for (const k of Object.keys(r) as (keyof Tally)[]) if (k in acc && typeof r[k] === "number") acc[k] += r[k];
        return acc;
      },
      { area: "total", requests: 0, writesAcknowledged: 0, writesFound: 0, faultsInjected: 0, faultsSurvived: 0, badInputsTried: 0, serverErrorsSeen: 0 },
    );
    printTable(
      "Reliability summary",
      [...rows, total].map((r) => ({
        area: r.area,
        requests: r.requests,
        "writes acknowledged": r.writesAcknowledged,
        "writes found": r.writesFound,
        "faults injected": r.faultsInjected,
        "faults survived": r.faultsSurvived,
        "bad inputs tried": r.badInputsTried,
        "5xx seen": r.serverErrorsSeen,
      })),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
