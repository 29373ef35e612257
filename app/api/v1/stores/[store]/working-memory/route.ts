import { workingMemoryEntryResponse, workingMemoryListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { agentActor, openGraphStore } from "@/lib/graph/store";
import { listWorkingMemory, setWorkingMemory, setWorkingMemoryInputSchema } from "@/lib/graph/working-memory";

export const GET = defineRoute({
  name: "GET /stores/{store}/working-memory",
  auth: "read",
  response: workingMemoryListResponse,
  params: storeParams,
  handler: ({ params }) => ({ entries: listWorkingMemory({ handle: openGraphStore(params.store) }) }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/working-memory",
  auth: "write",
  response: workingMemoryEntryResponse,
  params: storeParams,
  body: setWorkingMemoryInputSchema,
  handler: ({ params, body, principal }) => ({ entry: setWorkingMemory({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) }) }),
});
