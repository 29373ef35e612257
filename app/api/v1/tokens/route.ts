import { tokenCreatedResponse, tokenListResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { createApiToken, createTokenSchema, listApiTokens } from "@/lib/auth/tokens";

export const GET = defineRoute({
  name: "GET /tokens",
  auth: "admin",
  response: tokenListResponse,
  allStores: true,
  handler: () => ({ tokens: listApiTokens() }),
});

export const POST = defineRoute({
  name: "POST /tokens",
  auth: "admin",
  response: tokenCreatedResponse,
  allStores: true,
  body: createTokenSchema,
  status: 201,
  handler: ({ body, principal }) => {
    const { token, info } = createApiToken({ input: body, actor: `agent:${principal?.agentId}` });
    return { token, ...info };
  },
});
