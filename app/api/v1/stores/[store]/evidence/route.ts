import { respondCreated } from "@/lib/api/respond";
import { evidenceLinkResponse, evidenceListResponse, evidenceUnlinkedResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { evidenceKeySchema, linkEvidence, linkEvidenceInputSchema, listEvidenceByTarget, listEvidenceQuerySchema, unlinkEvidence } from "@/lib/graph/evidence";
import { agentActor, openGraphStore } from "@/lib/graph/store";

/** 201 for a new link; 200 with created: false when the link existed (its stance is updated). */
export const POST = defineRoute({
  name: "POST /stores/{store}/evidence",
  auth: "write",
  response: evidenceLinkResponse,
  params: storeParams,
  body: linkEvidenceInputSchema,
  handler: ({ params, body, principal }) => {
    const result = linkEvidence({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) });
    return respondCreated(result, result.created);
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/evidence",
  auth: "read",
  response: evidenceListResponse,
  params: storeParams,
  query: listEvidenceQuerySchema,
  handler: ({ params, query }) => listEvidenceByTarget({ handle: openGraphStore(params.store), query }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/evidence",
  auth: "write",
  response: evidenceUnlinkedResponse,
  params: storeParams,
  body: evidenceKeySchema,
  handler: ({ params, body, principal }) => unlinkEvidence({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) }),
});
