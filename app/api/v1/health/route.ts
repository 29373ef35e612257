import { healthResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { getGovernance } from "@/lib/db/connection";
import { versions } from "@/lib/version";

export const dynamic = "force-dynamic";

export const GET = defineRoute({
  name: "GET /health",
  auth: "public",
  response: healthResponse,
  handler: () => {
    getGovernance().sqlite.prepare("select 1").get();
    return { ok: true, versions: versions() };
  },
});
