import { artifactProofsResponse, provenanceRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { artifactLookupSchema, recordProvenanceSchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /provenance",
  auth: "write",
  response: provenanceRecordedResponse,
  body: recordProvenanceSchema,
  handler: ({ body, principal }) => {
    const caller = callerOf(principal);
    return governance().recordProvenanceBatch({ input: body, recordedBy: caller.agentId, caller });
  },
});

export const GET = defineRoute({
  name: "GET /provenance",
  auth: "read",
  response: artifactProofsResponse,
  query: artifactLookupSchema,
  handler: ({ query, principal }) => governance().getProofsByArtifact({ input: query, caller: callerOf(principal) }),
});
