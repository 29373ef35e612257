import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getPg } from "@/lib/db/pg";
import { count, insert, isUniqueViolation, read, row, write, type AnyStoreHandle } from "@/lib/db/port";
import { graphTables } from "@/lib/graph/tables";
import { openStore } from "@/lib/stores/stores";
import { openStorePg } from "@/lib/stores/engines/pg";
import { onPg, seedStore, useTestBackend, type TestEnv } from "./backend";

/**
 * The transaction port (lib/db/port.ts) on the backend under test: a write is
 * all or nothing, a failed step reaches the operation where it can answer
 * it, and on SQLite every call returns its value, not a promise.
 */
const store = "port";
const chains = graphTables.chains;
let env: TestEnv;

beforeEach(async () => {
  env = await useTestBackend();
  await seedStore(store);
});
afterEach(async () => env.cleanup());

async function handle(): Promise<AnyStoreHandle> {
  return onPg ? openStorePg({ pg: await getPg()!, store }) : openStore({ store });
}

const chain = (id: string) => ({ id, createdAt: 1, updatedAt: 1, thoughtCount: 0 });

describe("the transaction port", () => {
  it("keeps none of a write whose later step throws", async () => {
    const h = await handle();
    await expect(
      (async () =>
        write(
          h,
          (function* () {
            yield* insert(chains, chain("kept-only-if-committed"));
            throw new Error("the rule refused");
          })(),
        ))(),
    ).rejects.toThrow("the rule refused");
    expect(await read(h, count(chains))).toBe(0);
  });

  it("hands a failed step back to the operation, which may answer it (a unique key taken)", async () => {
    const h = await handle();
    await write(h, insert(chains, chain("taken")));
    const answer = await write(
      h,
      (function* () {
        try {
          yield* insert(chains, chain("taken"));
          return "inserted twice";
        } catch (e) {
          return isUniqueViolation(e) ? "taken" : "other error";
        }
      })(),
    );
    expect(answer).toBe("taken");
  });

  it.runIf(!onPg)("answers synchronously on SQLite", () => {
    const h = openStore({ store });
    const written = write(h, insert(chains, chain("now")));
    expect(written).toMatchObject({ id: "now" });
    expect(read(h, row(chains, (t) => eq(t.id, "now")))).toMatchObject({ id: "now", thoughtCount: 0 });
  });
});
