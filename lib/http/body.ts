import { AppError } from "../errors";

/**
 * Request bodies, read the same way by the agent API wrapper, the MCP
 * endpoint and the next-auth guard: a hard byte limit while streaming, strict
 * UTF-8, and a nesting limit before any schema sees the JSON.
 */

/** A body stream read up to `most` bytes: past that the stream is cancelled and `cut` says so (what came up to the bound is kept). */
export async function readStreamAtMost({ body, most }: { body: ReadableStream<Uint8Array> | null; most: number }): Promise<{ bytes: Buffer; cut: boolean }> {
  if (!body) return { bytes: Buffer.alloc(0), cut: false };
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(parts), cut: false };
    total += value.byteLength;
    if (total > most) {
      await reader.cancel().catch(() => undefined);
      parts.push(value.subarray(0, value.byteLength - (total - most)));
      return { bytes: Buffer.concat(parts), cut: true };
    }
    parts.push(value);
  }
}

/** Read the body with a hard byte limit; never buffers more than limit + one chunk. */
export async function readBodyLimited({ request, limit }: { request: Request; limit: number }): Promise<string> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    throw new AppError("payload_too_large", `request body is larger than ${limit} bytes`);
  }
  const { bytes, cut } = await readStreamAtMost({ body: request.body, most: limit });
  if (cut) throw new AppError("payload_too_large", `request body is larger than ${limit} bytes`);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new AppError("invalid_json", "request body is not valid UTF-8");
  }
}

/**
 * Deeper JSON is refused before any schema sees it: validating or storing a
 * value nested thousands deep (a task spec, node attributes) recurses past
 * the stack and would be a 500. Real specs and attributes are a few levels.
 */
export const MAX_JSON_DEPTH = 64;

/** Nesting depth of a parsed JSON value, counted without recursion and given up past `limit`. */
export function jsonDepthExceeds({ value, limit }: { value: unknown; limit: number }): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
  }
  return false;
}

/** 400 when a parsed body nests deeper than MAX_JSON_DEPTH. */
export function assertJsonDepth(json: unknown): void {
  if (jsonDepthExceeds({ value: json, limit: MAX_JSON_DEPTH })) {
    throw new AppError("invalid_json", `request body nests deeper than ${MAX_JSON_DEPTH} levels`, [{ message: `JSON nesting is limited to ${MAX_JSON_DEPTH} levels` }]);
  }
}

/** The one JSON body parser: 400 for text that is not JSON or nests deeper than MAX_JSON_DEPTH. */
export function parseJsonBody(text: string): unknown {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new AppError("invalid_json", "request body is not valid JSON", [{ message: (e as Error).message }]);
  }
  assertJsonDepth(json);
  return json;
}
