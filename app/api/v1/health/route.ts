import { healthResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { getGovernance, readOnlyParts } from "@/lib/db/connection";
import { getPg } from "@/lib/db/pg";
import { versions } from "@/lib/version";

export const dynamic = "force-dynamic";

export const GET = defineRoute({
  name: "GET /health",
  auth: "public",
  response: healthResponse,
  description:
    "Liveness and readiness: answers 200 only when this replica reaches the database it serves from (PostgreSQL with DATABASE_URL, else governance.db); 503 `unavailable` when it cannot, so a load balancer takes it out of rotation. " +
    "`read_only` lists what of DATA_DIR cannot be written — the folder, governance.db, how many stores (not their names: this route is public; the server log names them) — whose reads are served and writes answer 503; always empty with DATABASE_URL.",
  handler: async () => {
    // The database this replica serves from: with DATABASE_URL that is PostgreSQL (governance.db is not read, nor created).
    const pg = getPg();
    if (pg) await (await pg).pool.query("select 1");
    else getGovernance().sqlite.prepare("select 1").get();
    return { ok: true, versions: versions(), read_only: pg ? [] : readOnlyParts() };
  },
});
