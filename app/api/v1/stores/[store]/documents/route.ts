import { z } from "zod";
import { documentDeletedResponse, documentListResponse, putDocumentsResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { apiDocumentPathSchema, deleteApiDocument, listDocumentsByPrefix, putDocuments, putDocumentsSchema } from "@/lib/index/ingest";
import { openIndexedStore } from "@/lib/index/reindex";
import { storeNameSchema } from "@/lib/db/store-names";

const params = z.object({ store: storeNameSchema });

export const PUT = defineRoute({
  name: "PUT /stores/{store}/documents",
  auth: "write",
  response: putDocumentsResponse,
  params,
  body: putDocumentsSchema,
  handler: ({ params, body }) => ({ documents: putDocuments({ sqlite: openIndexedStore({ store: params.store }), input: body }) }),
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
  handler: ({ params, query }) => listDocumentsByPrefix({ sqlite: openIndexedStore({ store: params.store }), ...query }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/documents",
  auth: "write",
  response: documentDeletedResponse,
  params,
  query: z.object({ path: apiDocumentPathSchema }).strict(),
  handler: ({ params, query }) => {
    deleteApiDocument({ sqlite: openIndexedStore({ store: params.store }), path: query.path });
    return { deleted: query.path };
  },
});
