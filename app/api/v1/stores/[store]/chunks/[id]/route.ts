import { z } from "zod";
import { chunkDetail } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { chunkIdSchema, getChunkByChunkId } from "@/lib/index/ingest";
import { storeNameSchema } from "@/lib/db/store-names";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/chunks/{id}",
  auth: "read",
  response: chunkDetail,
  params: z.object({ store: storeNameSchema, id: chunkIdSchema }),
  handler: ({ params }) => getChunkByChunkId({ handle: openStore({ store: params.store }), chunkId: params.id }),
});
