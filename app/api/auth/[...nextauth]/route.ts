import NextAuth from "next-auth";
import { getAuthOptions } from "@/lib/auth/options";

type Ctx = { params: Promise<{ nextauth: string[] }> };

// Built per request so the secret is read at run time, not at build time.
async function handler(req: Request, ctx: Ctx) {
  return NextAuth(getAuthOptions())(req, { params: await ctx.params });
}

export { handler as GET, handler as POST };
