import { z } from "zod";
import { graphDeletedResponse, workingMemoryEntryResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeNameSchema } from "@/lib/db/store-names";
import { workingMemoryKeySchema } from "@/lib/graph/working-memory";
import { graphBackend } from "@/lib/graph/backend";

const params = z.object({ store: storeNameSchema, key: workingMemoryKeySchema }).strict();

export const GET = defineRoute({
  name: "GET /stores/{store}/working-memory/{key}",
  auth: "read",
  response: workingMemoryEntryResponse,
  params,
  handler: async ({ params }) => ({ entry: await graphBackend().getWorkingMemory({ store: params.store, key: params.key }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/working-memory/{key}",
  auth: "write",
  response: graphDeletedResponse,
  params,
  handler: ({ params }) => graphBackend().deleteWorkingMemory({ store: params.store, key: params.key }),
});
