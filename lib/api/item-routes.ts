import { z } from "zod";
import { storeNameSchema } from "../db/store-names";
import { itemIdSchema, itemKindSchema } from "../index/item-state";

/** Route params of /stores/{store}/items/{kind}/{id}/…: any kind of item, addressed by its own id. */
export const itemParams = z.object({ store: storeNameSchema, kind: itemKindSchema, id: itemIdSchema }).strict();
