import { healthResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { getConfig } from "@/lib/config";
import { getGovernance, readOnlyParts } from "@/lib/db/connection";
import { getPg } from "@/lib/db/pg";
import { preparedOnce } from "@/lib/db/statements";
import { memoryWatchStatus } from "@/lib/index/watch";
import { versions } from "@/lib/version";

/**
 * What of DATA_DIR cannot be written, looked at most once per READ_ONLY_FRESH_MS: it takes a few file-system calls
 * per store, which a load balancer's probe (or a flood of them) would otherwise pay on every request.
 */
const READ_ONLY_FRESH_MS = 1000;
let readOnlySeen: { dataDir: string; at: number; parts: ReturnType<typeof readOnlyParts> } | null = null;

function readOnlyNow(): ReturnType<typeof readOnlyParts> {
  const { dataDir } = getConfig();
  const now = performance.now();
  if (readOnlySeen?.dataDir !== dataDir || now - readOnlySeen.at >= READ_ONLY_FRESH_MS) readOnlySeen = { dataDir, at: now, parts: readOnlyParts() };
  return readOnlySeen.parts;
}

export const dynamic = "force-dynamic";

export const GET = defineRoute({
  name: "GET /health",
  auth: "public",
  response: healthResponse,
  description:
    "Liveness and readiness: answers 200 only when this replica reaches the database it serves from (PostgreSQL with DATABASE_URL, else governance.db); 503 `unavailable` when it cannot, so a load balancer takes it out of rotation. " +
    "`read_only` lists what of DATA_DIR cannot be written — the folder, governance.db, how many stores (not their names: this route is public; the server log names them) — whose reads are served and writes answer 503; always empty with DATABASE_URL. " +
    "`memory_watch` counts the memory folders watched for changes and the stores left to the periodic scan past DUALMIND_MAX_WATCHED_DIRS.",
  handler: async () => {
    // The database this replica serves from: with DATABASE_URL that is PostgreSQL (governance.db is not read, nor created).
    const pg = getPg();
    if (pg) await (await pg).pool.query("select 1");
    else preparedOnce({ sqlite: getGovernance().sqlite, sql: "select 1" }).get();
    return { ok: true, versions: versions(), read_only: pg ? [] : readOnlyNow(), memory_watch: memoryWatchStatus() };
  },
});
