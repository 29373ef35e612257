import { respondCreated } from "@/lib/api/respond";
import { evidenceLinkResponse, evidenceListResponse, evidenceUnlinkedResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { evidenceKeySchema, linkEvidenceInputSchema, listEvidenceQuerySchema } from "@/lib/graph/evidence";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

/** 201 for a new link; 200 with created: false when the link existed (its stance is updated). */
export const POST = defineRoute({
  name: "POST /stores/{store}/evidence",
  auth: "write",
  response: evidenceLinkResponse,
  params: storeParams,
  body: linkEvidenceInputSchema,
  handler: async ({ params, body, principal }) => {
    const result = await graphBackend().linkEvidence({ store: params.store, input: body, actor: actorOf(principal) });
    return respondCreated({ body: result, created: result.created });
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/evidence",
  auth: "read",
  response: evidenceListResponse,
  params: storeParams,
  query: listEvidenceQuerySchema,
  handler: ({ params, query }) => graphBackend().listEvidence({ store: params.store, query }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/evidence",
  auth: "write",
  response: evidenceUnlinkedResponse,
  params: storeParams,
  body: evidenceKeySchema,
  handler: ({ params, body, principal }) => graphBackend().unlinkEvidence({ store: params.store, input: body, actor: actorOf(principal) }),
});
