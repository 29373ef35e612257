import { workingMemoryEntryResponse, workingMemoryListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { listWorkingMemoryQuerySchema, setWorkingMemoryInputSchema } from "@/lib/graph/working-memory";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/working-memory",
  auth: "read",
  response: workingMemoryListResponse,
  params: storeParams,
  query: listWorkingMemoryQuerySchema,
  handler: async ({ params, query }) => {
    const page = await graphBackend().listWorkingMemory({ store: params.store, query });
    return { entries: page.entries, total: page.total, next_offset: page.nextOffset };
  },
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/working-memory",
  auth: "write",
  response: workingMemoryEntryResponse,
  params: storeParams,
  body: setWorkingMemoryInputSchema,
  handler: async ({ params, body, principal }) => ({ entry: await graphBackend().setWorkingMemory({ store: params.store, input: body, actor: actorOf(principal) }) }),
});
