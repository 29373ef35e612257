import { AppError } from "../errors";
import { readBodyLimited } from "../http/body";
import { retryAfterSecondsOf } from "./sign-in-errors";

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
  const body = await readBodyLimited({ request: request.clone(), limit: AUTH_BODY_LIMIT_BYTES });
  if (request.headers.get("content-type")?.includes("application/json")) {
    try {
      JSON.parse(body);
    } catch {
      throw new AppError("invalid_json", "request body is not valid JSON");
    }
  }
}

/**
 * next-auth answers every refused credentials sign-in with a 401 (JSON
 * `{ url }` for fetch callers, a redirect for forms), the throttled ones
 * included. Give a throttled answer its proper status and a Retry-After
 * header: 429 for JSON (next-auth's signIn() reads the body whatever the
 * status), the redirect left as a redirect so a browser still follows it.
 */
export async function markThrottledSignIn(response: Response): Promise<Response> {
  const location = response.headers.get("location");
  if (location) {
    const wait = retryAfterSecondsOf(errorParam(location));
    if (wait !== null) response.headers.set("retry-after", String(wait));
    return response;
  }
  if (response.status !== 401 || !response.headers.get("content-type")?.includes("application/json")) return response;
  const body = await response.text();
  let wait: number | null = null;
  try {
    wait = retryAfterSecondsOf(errorParam((JSON.parse(body) as { url?: unknown }).url));
  } catch {
    // not next-auth's { url } answer: pass it on as it was
  }
  const headers = new Headers(response.headers);
  if (wait === null) return new Response(body, { status: response.status, headers });
  headers.set("retry-after", String(wait));
  return new Response(body, { status: 429, headers });
}

function errorParam(url: unknown): string | null {
  if (typeof url !== "string") return null;
  try {
    return new URL(url, "http://localhost").searchParams.get("error");
  } catch {
    return null;
  }
}
