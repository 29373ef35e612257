import { z } from "zod";
import { deletedResponse } from "@/lib/api/responses/common";
import { memoryTrashReadOrListResponse, memoryWithBody } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { getConfig } from "@/lib/config";
import { storeNameSchema } from "@/lib/db/store-names";
import { restoreMemorySchema, trashIdSchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";

const params = z.object({ store: storeNameSchema });

export const GET = defineRoute({
  name: "GET /stores/{store}/memories/trash",
  description: "Deleted memories kept for DUALMIND_MEMORY_TRASH_DAYS, newest first (at most 200); with `id`, one of them with its body.",
  auth: "read",
  response: memoryTrashReadOrListResponse,
  params,
  query: z.object({ id: trashIdSchema.optional() }).strict(),
  handler: async ({ params, query }) => {
    if (query.id) return stores().getTrashedMemory({ store: params.store, id: query.id });
    return { retention_days: getConfig().memoryTrashDays, trash: await stores().listMemoryTrash({ store: params.store }) };
  },
});

export const POST = defineRoute({
  name: "POST /stores/{store}/memories/trash",
  description: "Restore a deleted memory, byte for byte, at its old path or at `to` (409 when a memory is already there).",
  auth: "write",
  response: memoryWithBody,
  params,
  body: restoreMemorySchema,
  handler: ({ params, body, principal }) => stores().restoreMemory({ store: params.store, input: body, actor: actorOf(principal) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/memories/trash",
  description: "Purge one deleted memory now, before the retention would (audited as memory.purge).",
  auth: "write",
  response: deletedResponse,
  params,
  query: z.object({ id: trashIdSchema }).strict(),
  handler: async ({ params, query, principal }) => {
    await stores().purgeTrashedMemory({ store: params.store, id: query.id, actor: actorOf(principal) });
    return { deleted: query.id };
  },
});
