import { z } from "zod";
import { storeNameSchema } from "../db/store-names";

/** Route params of every /stores/{store}/... route. */
export const storeParams = z.object({ store: storeNameSchema }).strict();
