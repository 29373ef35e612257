import { readBodyLimited } from "../api/route";
import { AppError } from "../errors";

/** A sign-in form is a few hundred bytes; nothing next-auth takes needs more. */
export const AUTH_BODY_LIMIT_BYTES = 16 * 1024;

/**
 * next-auth 4 answers two caller mistakes with a 500: a JSON body that does
 * not parse (its route handler calls request.json() unguarded) and anything
 * but POST to the credentials callback (it throws "not supported"). It also
 * reads bodies of any size. Refuse all three first, so a bad request is a 4xx
 * with the envelope, never a 500 or an unbounded read.
 */
export async function assertWellFormedAuthRequest({ request, action }: { request: Request; action: string[] }): Promise<void> {
  if (action[0] === "callback" && action[1] === "credentials" && request.method !== "POST") {
    throw new AppError("method_not_allowed", "sign in with POST /api/auth/callback/credentials");
  }
  if (request.method !== "POST") return;
  const body = await readBodyLimited(request.clone(), AUTH_BODY_LIMIT_BYTES);
  if (request.headers.get("content-type")?.includes("application/json")) {
    try {
      JSON.parse(body);
    } catch {
      throw new AppError("invalid_json", "request body is not valid JSON");
    }
  }
}
