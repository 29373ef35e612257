import { memoryCreatedResponse } from "@/lib/api/responses/proposals";
import { z } from "zod";
import { deletedResponse } from "@/lib/api/responses/common";
import { memoryReadOrListResponse, memoryWithBody } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { AppError, isAppError } from "@/lib/errors";
import { createMemorySchema, findMemoryRedirect, memoryFilterSchema, memoryPathSchema, updateMemorySchema } from "@/lib/index/memories";
import { storeNameSchema } from "@/lib/db/store-names";

const params = z.object({ store: storeNameSchema });

export const GET = defineRoute({
  name: "GET /stores/{store}/memories",
  auth: "read",
  response: memoryReadOrListResponse,
  params,
  // `path` reads one memory (with its body); anything else filters the list.
  query: z.union([z.object({ path: memoryPathSchema }).strict(), memoryFilterSchema]),
  handler: async ({ params, query }) => {
    if ("path" in query) return readMemoryOrSayWhereItWent({ store: params.store, memoryPath: query.path });
    return stores().listMemories({ store: params.store, filter: query });
  },
});

/** A memory moved away answers 404 naming its new path (details[0].moved_to), so a caller holding the old path can follow it. */
async function readMemoryOrSayWhereItWent({ store, memoryPath }: { store: string; memoryPath: string }) {
  try {
    return await stores().getMemory({ store, memoryPath });
  } catch (e) {
    if (!(isAppError(e) && e.code === "not_found")) throw e;
    const moved = await findMemoryRedirect({ store, memoryPath });
    if (!moved) throw e;
    throw new AppError("not_found", `no memory ${memoryPath}: it was moved to ${moved.path}`, [{ path: "path", message: `moved to ${moved.path}`, moved_to: moved.path }]);
  }
}

export const POST = defineRoute({
  name: "POST /stores/{store}/memories",
  auth: "write",
  response: memoryCreatedResponse,
  params,
  body: createMemorySchema,
  status: 201,
  handler: ({ params, body, principal }) => stores().createMemory({ store: params.store, input: body, actor: actorOf(principal) }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/memories",
  auth: "write",
  response: memoryWithBody,
  params,
  body: updateMemorySchema,
  handler: ({ params, body, principal }) => stores().updateMemory({ store: params.store, input: body, actor: actorOf(principal) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/memories",
  auth: "write",
  response: deletedResponse,
  params,
  query: z.object({ path: memoryPathSchema }).strict(),
  handler: async ({ params, query, principal }) => {
    await stores().deleteMemory({ store: params.store, memoryPath: query.path, actor: actorOf(principal) });
    return { deleted: query.path };
  },
});
