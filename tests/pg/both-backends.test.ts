import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { onPg } from "../backend";
import { BOTH_BACKEND_SUITES } from "./both-backends";
import { ONE_BACKEND_SUITES } from "./one-backend";
import reliabilityPg from "../../vitest.reliability.pg.config";

/**
 * The backend fixture's own promises (tests/backend.ts): its list of what
 * answers 501 on PostgreSQL is the routes' and tools' own, and the shared
 * suites really ran here with DM_TEST_BACKEND=pg.
 */
describe("the shared suites' PostgreSQL fixture", () => {
  it("runs with DM_TEST_BACKEND=pg (vitest.pg.config.ts)", () => {
    expect(onPg).toBe(true);
  });

  it("every listed suite exists and seeds through the fixture", () => {
    for (const file of BOTH_BACKEND_SUITES) expect(fs.readFileSync(file, "utf8"), file).toMatch(/from "\.\.?\/backend"/);
  });

  it("every unit and reliability test file runs on both backends or says why it runs once", () => {
    const files = [...fs.readdirSync("tests").map((f) => `tests/${f}`), ...fs.readdirSync("tests/reliability").map((f) => `tests/reliability/${f}`)].filter((f) => f.endsWith(".test.ts")).sort();
    // The reliability files run again in `npm run test:reliability:pg` (vitest.reliability.pg.config.ts, skipping per test what only SQLite has), but those its exclude names.
    const excludedOnPg = new Set(reliabilityPg.test?.exclude ?? []);
    const both = new Set<string>([...BOTH_BACKEND_SUITES, ...files.filter((f) => f.startsWith("tests/reliability/") && !excludedOnPg.has(f))]);
    const unclassified = files.filter((f) => !both.has(f) && !(f in ONE_BACKEND_SUITES));
    expect(unclassified, "add each to tests/pg/both-backends.ts (seeding through tests/backend.ts) or to tests/pg/one-backend.ts with the reason").toEqual([]);
    expect(files.filter((f) => both.has(f) && f in ONE_BACKEND_SUITES), "listed as both and as one").toEqual([]);
    expect(BOTH_BACKEND_SUITES.filter((f, i) => BOTH_BACKEND_SUITES.indexOf(f) !== i), "listed twice (the file would run twice)").toEqual([]);
    for (const f of Object.keys(ONE_BACKEND_SUITES)) expect(fs.existsSync(f), `${f} (tests/pg/one-backend.ts) exists`).toBe(true);
  });
});
