import { z } from "zod";
import { chunkDetail } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { chunkIdSchema, getChunkByChunkId } from "@/lib/index/ingest";
import { openIndexedStore } from "@/lib/index/reindex";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}/chunks/{id}",
  auth: "read",
  response: chunkDetail,
  params: z.object({ store: storeNameSchema, id: chunkIdSchema }),
  handler: ({ params }) => getChunkByChunkId({ sqlite: openIndexedStore({ store: params.store }), chunkId: params.id }),
});
