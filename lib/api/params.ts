import { z } from "zod";
import { storeNameSchema } from "../stores/stores";

/** Route params of every /stores/{store}/... route. */
export const storeParams = z.object({ store: storeNameSchema }).strict();
