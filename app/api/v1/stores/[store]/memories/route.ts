import { z } from "zod";
import { deletedResponse } from "@/lib/api/responses/common";
import { memoryReadOrListResponse, memoryWithBody } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import {
  createMemory,
  createMemorySchema,
  deleteMemory,
  getMemoryByPath,
  listMemoriesByFilter,
  memoryFilterSchema,
  memoryPathSchema,
  updateMemory,
  updateMemorySchema,
} from "@/lib/index/memories";
import { openIndexedStore } from "@/lib/index/reindex";
import { storeNameSchema } from "@/lib/db/store-names";

const params = z.object({ store: storeNameSchema });

export const GET = defineRoute({
  name: "GET /stores/{store}/memories",
  auth: "read",
  response: memoryReadOrListResponse,
  params,
  // `path` reads one memory (with its body); anything else filters the list.
  query: z.union([z.object({ path: memoryPathSchema }).strict(), memoryFilterSchema]),
  handler: ({ params, query }) => {
    const sqlite = openIndexedStore({ store: params.store });
    if ("path" in query) return getMemoryByPath({ store: params.store, memoryPath: query.path });
    return listMemoriesByFilter({ sqlite, filter: query });
  },
});

export const POST = defineRoute({
  name: "POST /stores/{store}/memories",
  auth: "write",
  response: memoryWithBody,
  params,
  body: createMemorySchema,
  status: 201,
  handler: ({ params, body }) => createMemory({ store: params.store, sqlite: openIndexedStore({ store: params.store }), input: body }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/memories",
  auth: "write",
  response: memoryWithBody,
  params,
  body: updateMemorySchema,
  handler: ({ params, body }) => updateMemory({ store: params.store, sqlite: openIndexedStore({ store: params.store }), input: body }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/memories",
  auth: "write",
  response: deletedResponse,
  params,
  query: z.object({ path: memoryPathSchema }).strict(),
  handler: ({ params, query }) => {
    deleteMemory({ store: params.store, sqlite: openIndexedStore({ store: params.store }), memoryPath: query.path });
    return { deleted: query.path };
  },
});
