import { z } from "zod";
import { storeNameSchema } from "../db/store-names";

/** Route params of every /stores/{store}/... route. */
export const storeParams = z.object({ store: storeNameSchema }).strict();

/** Route params of /stores/{store}/<thing>/{id} where the id is a uuid (thoughts, nodes, frames, relations). */
export const storeItemParams = z.object({ store: storeNameSchema, id: z.uuid() }).strict();
