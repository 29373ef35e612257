/**
 * Counters for the summary table the suite prints at the end. Each test file
 * (its own forked process) appends one JSON line to the file named by
 * RELIABILITY_SUMMARY_FILE; the global setup's teardown adds them up.
 */
import fs from "node:fs";

export type Tally = {
  requests: number;
  writesAcknowledged: number;
  writesFound: number;
  faultsInjected: number;
  faultsSurvived: number;
  badInputsTried: number;
  serverErrorsSeen: number;
};

export const EMPTY_TALLY: Tally = { requests: 0, writesAcknowledged: 0, writesFound: 0, faultsInjected: 0, faultsSurvived: 0, badInputsTried: 0, serverErrorsSeen: 0 };

export function recordTally(area: string, tally: Partial<Tally>): void {
  const file = process.env.RELIABILITY_SUMMARY_FILE;
  if (!file) return;
  fs.appendFileSync(file, JSON.stringify({ area, ...EMPTY_TALLY, ...tally }) + "\n");
}

export function readTallies(file: string): (Tally & { area: string })[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Tally & { area: string });
}
