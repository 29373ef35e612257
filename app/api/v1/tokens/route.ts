import { tokenCreatedResponse, tokenListResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { createTokenSchema } from "@/lib/auth/tokens";
import { governance } from "@/lib/backend/governance";

export const GET = defineRoute({
  name: "GET /tokens",
  auth: "admin",
  response: tokenListResponse,
  allStores: true,
  handler: async () => ({ tokens: await governance().listApiTokens({}) }),
});

export const POST = defineRoute({
  name: "POST /tokens",
  auth: "admin",
  response: tokenCreatedResponse,
  allStores: true,
  body: createTokenSchema,
  status: 201,
  handler: async ({ body, principal }) => {
    const { token, info } = await governance().createApiToken({ input: body, actor: `agent:${principal?.agentId}` });
    return { token, ...info };
  },
});
