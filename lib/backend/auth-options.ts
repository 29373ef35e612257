import type { AuthOptions, Session } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { z } from "zod";
import { clientAddress } from "../auth/login-throttle";
import { sameOriginUrl } from "../auth/redirects";
import { getAuthSecret } from "../auth/secret";
import { tooManyAttemptsError } from "../auth/sign-in-errors";
import type { Role } from "../auth/users";
import { getConfig } from "../config";
import { log } from "../log";
import { resolveSessionUser, signInWithPassword } from "./users";

// A name holding NUL is never a user's (usernameSchema), and PostgreSQL text cannot hold one: refused as a wrong name, before any query.
const credentialsSchema = z.object({
  username: z
    .string()
    .min(1)
    .max(64)
    .refine((u) => !u.includes("\u0000")),
  password: z.string().min(1).max(256),
});

/** What authorize() hands to the jwt callback at sign-in. */
type SignedInUser = { id: string; name: string; role: Role; sv: number };

/** next-auth options: credentials over the users table (through governance(): SQLite or PostgreSQL), JWT sessions carrying id, role and session version. */
export function getAuthOptions(): AuthOptions {
  return {
    secret: getAuthSecret(),
    session: { strategy: "jwt", maxAge: 12 * 60 * 60 },
    // Errors (a throttled attempt's `TooManyAttempts:<s>` among them) land on our page, which explains them.
    pages: { signIn: "/login", error: "/login" },
    providers: [
      CredentialsProvider({
        name: "dualmind",
        credentials: { username: { label: "Username", type: "text" }, password: { label: "Password", type: "password" } },
        // next-auth 4 on the App Router passes the request's headers only (no socket), see clientAddress.
        async authorize(raw, req): Promise<SignedInUser | null> {
          const parsed = credentialsSchema.safeParse(raw);
          if (!parsed.success) return null;
          const address = clientAddress({ forwardedFor: req?.headers?.["x-forwarded-for"], trustProxyHops: getConfig().trustProxyHops });
          let result: Awaited<ReturnType<typeof signInWithPassword>>;
          try {
            result = await signInWithPassword({ ...parsed.data, address });
          } catch (e) {
            // next-auth would put the message (a failed query's SQL among them) in `?error=`: the log gets it, the person a code.
            log("error", "sign-in failed", { error: e instanceof Error ? e.message : String(e) });
            throw new Error("SignInUnavailable");
          }
          // next-auth turns a thrown message into `?error=<message>` (401); the route answers it as a 429.
          if (!result.ok && result.reason === "throttled") throw new Error(tooManyAttemptsError(result.retryAfterMs / 1000));
          if (!result.ok) return null;
          const { user } = result;
          return { id: String(user.id), name: user.username, role: user.role, sv: user.sessionVersion };
        },
      }),
    ],
    callbacks: {
      jwt({ token, user }) {
        if (user) {
          const signedIn = user as unknown as SignedInUser;
          token.uid = Number(signedIn.id);
          token.role = signedIn.role;
          token.sv = signedIn.sv;
          // Set here, not left to next-auth's defaults: resolveSessionUser requires it to match the row.
          token.name = signedIn.name;
        }
        return token;
      },
      async session({ session, token }) {
        // A revoked or disabled session reads as signed out here too (GET /api/auth/session, getServerSession).
        if (!(await resolveSessionUser({ claims: token }))) return { expires: session.expires } as Session;
        return { ...session, user: { ...session.user, id: token.uid, role: token.role, sv: token.sv } };
      },
      // Every callbackUrl next-auth follows (sign-in, sign-out, its callback cookie) stays on this origin.
      redirect({ url, baseUrl }) {
        return sameOriginUrl({ callbackUrl: url, baseUrl });
      },
    },
  };
}
