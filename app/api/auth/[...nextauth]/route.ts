import { randomUUID } from "node:crypto";
import NextAuth from "next-auth";
import { errorResponse } from "@/lib/api/route";
import { assertWellFormedAuthRequest, markThrottledSignIn } from "@/lib/auth/auth-request";
import { getAuthOptions } from "@/lib/backend/auth-options";

type Ctx = { params: Promise<{ nextauth: string[] }> };

// Built per request so the secret is read at run time, not at build time.
async function handler(req: Request, ctx: Ctx) {
  const params = await ctx.params;
  try {
    await assertWellFormedAuthRequest({ request: req, action: params.nextauth ?? [] });
  } catch (e) {
    return errorResponse({ error: e, requestId: randomUUID() });
  }
  return markThrottledSignIn(await NextAuth(getAuthOptions())(req, { params }));
}

export { handler as GET, handler as POST };
