import "server-only";
import { getServerSession } from "next-auth";
import { forbidden, redirect } from "next/navigation";
import { getAuthOptions } from "@/lib/backend/auth-options";
import { resolveSessionUser } from "@/lib/backend/users";
import { roleAtLeast, type PublicUser, type Role } from "@/lib/auth/users";
import { AppError } from "@/lib/errors";

/**
 * The signed-in person, re-read from governance.db on every call so a
 * disabled account or a changed role takes effect at once (the JWT only
 * says who they were when they signed in).
 */
export async function getSessionUser(): Promise<PublicUser | null> {
  const session = await getServerSession(getAuthOptions());
  return await resolveSessionUser({ claims: session?.user ? { uid: session.user.id, role: session.user.role, sv: session.user.sv, name: session.user.name } : null });
}

/** For pages: signed in or sent to the login page. */
export async function requireUser(): Promise<PublicUser> {
  const user = await getSessionUser();
  if (!user) redirect("/login");
  return user;
}

/**
 * For admin-only pages: anyone else gets a 403 "admins only" page inside the
 * dashboard layout (app/(dashboard)/forbidden.tsx). Call it first, before any
 * data is read. Why 403 and not 404: SECURITY.md, "Admin pages".
 */
export async function requireAdmin(): Promise<PublicUser> {
  const user = await requireUser();
  if (!roleAtLeast({ role: user.role, min: "admin" })) forbidden();
  return user;
}

/** For server actions: they are public endpoints, so each one checks for itself. */
export async function requireRoleForAction(role: Role): Promise<PublicUser> {
  const user = await getSessionUser();
  if (!user) throw new AppError("unauthorized", "sign in first");
  if (!roleAtLeast({ role: user.role, min: role })) throw new AppError("forbidden", role === "admin" ? "admins only" : "editors and admins only");
  return user;
}
