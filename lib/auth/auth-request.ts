import { AppError } from "../errors";

/**
 * next-auth 4 answers two caller mistakes with a 500: a JSON body that does
 * not parse (its route handler calls request.json() unguarded) and anything
 * but POST to the credentials callback (it throws "not supported"). Refuse
 * both first, so a bad request is a 4xx with the envelope, never a 500.
 */
export async function assertWellFormedAuthRequest({ request, action }: { request: Request; action: string[] }): Promise<void> {
  if (action[0] === "callback" && action[1] === "credentials" && request.method !== "POST") {
    throw new AppError("method_not_allowed", "sign in with POST /api/auth/callback/credentials");
  }
  if (request.method === "POST" && request.headers.get("content-type")?.includes("application/json")) {
    try {
      JSON.parse(await request.clone().text());
    } catch {
      throw new AppError("invalid_json", "request body is not valid JSON");
    }
  }
}
