import { z } from "zod";
import { documentDeletedResponse, documentListResponse, putDocumentsResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { apiDocumentPathSchema, putDocumentsSchema } from "@/lib/index/ingest";
import { storeNameSchema } from "@/lib/db/store-names";

const params = z.object({ store: storeNameSchema });

export const PUT = defineRoute({
  name: "PUT /stores/{store}/documents",
  auth: "write",
  response: putDocumentsResponse,
  params,
  body: putDocumentsSchema,
  handler: async ({ params, body, principal }) => ({ documents: await stores().putDocuments({ store: params.store, input: body, actor: actorOf(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/documents",
  auth: "read",
  response: documentListResponse,
  params,
  query: z
    .object({
      prefix: z.string().max(512).default(""),
      limit: z.coerce.number().int().min(1).max(500).default(100),
      offset: z.coerce.number().int().min(0).default(0),
    })
    .strict(),
  handler: ({ params, query }) => stores().listDocuments({ store: params.store, ...query }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/documents",
  auth: "write",
  response: documentDeletedResponse,
  params,
  query: z.object({ path: apiDocumentPathSchema }).strict(),
  handler: async ({ params, query, principal }) => {
    await stores().deleteDocument({ store: params.store, path: query.path, actor: actorOf(principal) });
    return { deleted: query.path };
  },
});
