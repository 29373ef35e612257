import { defineRoute } from "@/lib/api/route";
import { AppError } from "@/lib/errors";
import { canUseStore } from "@/lib/auth/tokens";
import { createStore, createStoreSchema, listStores } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores",
  auth: "read",
  handler: ({ principal }) => ({
    stores: listStores().filter((s) => principal && canUseStore(principal, s.name)),
  }),
});

export const POST = defineRoute({
  name: "POST /stores",
  auth: "write",
  body: createStoreSchema,
  status: 201,
  handler: ({ body, principal }) => {
    if (principal && !canUseStore(principal, body.name)) {
      throw new AppError("forbidden", `this token may not use store ${body.name}`);
    }
    return createStore({ input: body, actor: `agent:${principal?.agentId}` });
  },
});
