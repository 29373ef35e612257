import { defineRoute } from "@/lib/api/route";
import { artifactLookupSchema, getProofsByArtifact, recordProvenanceBatch, recordProvenanceSchema } from "@/lib/governance/ledger";
import { callerOf } from "@/lib/governance/respond";

export const POST = defineRoute({
  name: "POST /provenance",
  auth: "write",
  body: recordProvenanceSchema,
  handler: ({ body, principal }) => recordProvenanceBatch({ input: body, recordedBy: callerOf(principal).agentId }),
});

export const GET = defineRoute({
  name: "GET /provenance",
  auth: "read",
  query: artifactLookupSchema,
  handler: ({ query }) => getProofsByArtifact(query),
});
