import type { AuthOptions } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { z } from "zod";
import { getAuthSecret } from "./secret";
import { authenticateUser, type Role } from "./users";

const credentialsSchema = z.object({ username: z.string().min(1).max(64), password: z.string().min(1).max(256) });

/** next-auth options: credentials over the users table, JWT sessions carrying id and role. */
export function getAuthOptions(): AuthOptions {
  return {
    secret: getAuthSecret(),
    session: { strategy: "jwt", maxAge: 12 * 60 * 60 },
    pages: { signIn: "/login" },
    providers: [
      CredentialsProvider({
        name: "dualmind",
        credentials: { username: { label: "Username", type: "text" }, password: { label: "Password", type: "password" } },
        async authorize(raw) {
          const parsed = credentialsSchema.safeParse(raw);
          if (!parsed.success) return null;
          const user = authenticateUser(parsed.data);
          if (!user) return null;
          return { id: String(user.id), name: user.username, role: user.role };
        },
      }),
    ],
    callbacks: {
      jwt({ token, user }) {
        if (user) {
          token.uid = Number(user.id);
          token.role = (user as { role?: Role }).role;
        }
        return token;
      },
      session({ session, token }) {
        return { ...session, user: { ...session.user, id: token.uid, role: token.role } };
      },
    },
  };
}
