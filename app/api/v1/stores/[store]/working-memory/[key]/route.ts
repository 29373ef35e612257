import { z } from "zod";
import { graphDeletedResponse, workingMemoryEntryResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeNameSchema } from "@/lib/db/store-names";
import { openGraphStore } from "@/lib/graph/store";
import { deleteWorkingMemoryByKey, getWorkingMemoryByKey, workingMemoryKeySchema } from "@/lib/graph/working-memory";

const params = z.object({ store: storeNameSchema, key: workingMemoryKeySchema }).strict();

export const GET = defineRoute({
  name: "GET /stores/{store}/working-memory/{key}",
  auth: "read",
  response: workingMemoryEntryResponse,
  params,
  handler: ({ params }) => ({ entry: getWorkingMemoryByKey({ handle: openGraphStore(params.store), key: params.key }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/working-memory/{key}",
  auth: "write",
  response: graphDeletedResponse,
  params,
  handler: ({ params }) => deleteWorkingMemoryByKey({ handle: openGraphStore(params.store), key: params.key }),
});
