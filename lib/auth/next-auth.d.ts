import "next-auth";
import "next-auth/jwt";

declare module "next-auth" {
  interface Session {
    user: { id?: number; role?: "viewer" | "editor" | "admin"; sv?: number; name?: string | null; email?: string | null; image?: string | null };
  }
}

declare module "next-auth/jwt" {
  interface JWT {
    uid?: number;
    role?: "viewer" | "editor" | "admin";
    /** users.session_version when the token was issued. */
    sv?: number;
  }
}
