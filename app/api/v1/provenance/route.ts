import { artifactProofsResponse, provenanceRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { artifactLookupSchema, getProofsByArtifact, recordProvenanceBatch, recordProvenanceSchema } from "@/lib/governance/ledger";
import { callerOf } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /provenance",
  auth: "write",
  response: provenanceRecordedResponse,
  body: recordProvenanceSchema,
  handler: ({ body, principal }) => {
    const caller = callerOf(principal);
    return recordProvenanceBatch({ input: body, recordedBy: caller.agentId, caller });
  },
});

export const GET = defineRoute({
  name: "GET /provenance",
  auth: "read",
  response: artifactProofsResponse,
  query: artifactLookupSchema,
  handler: ({ query, principal }) => getProofsByArtifact(query, callerOf(principal)),
});
