/**
 * The Streamable HTTP side of MCP, framework-free (Web Request → Response).
 * Stateless: every POST authenticates its bearer token and gets a fresh
 * server bound to that principal, so scopes and store allow-lists are the
 * token's, exactly as on the REST API.
 */
import { randomUUID } from "node:crypto";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { authenticateBearer, errorResponse } from "../api/route";
import { assertJsonDepth, readBodyLimited } from "../http/body";
import { getConfig } from "../config";
import { limitReached } from "../common";
import { withSharedQueryBudget } from "../db/query-budget";
import { holdingStoreHandles } from "../db/connection";
import { AppError } from "../errors";
import { createMcpServer } from "./server";

/** Longest tool name accepted: every tool's name is far shorter, and a longer one is refused before any work or record. */
export const MAX_TOOL_NAME_CHARS = 128;
function assertToolNameLength(message: unknown): void {
  const name = (message as { params?: { name?: unknown } } | null)?.params?.name;
  if (typeof name === "string" && name.length > MAX_TOOL_NAME_CHARS) throw new AppError("invalid_request", `a tool name is at most ${MAX_TOOL_NAME_CHARS} characters; tools/list names the tools`, [{ path: "params.name", message: `longer than ${MAX_TOOL_NAME_CHARS} characters` }]);
}

/**
 * A JSON-RPC batch is many calls in one request: more than
 * DUALMIND_MCP_BATCH_MAX (0: any batch) is refused before any runs, and the
 * calls of an accepted one share one query budget.
 */
function assertBatchWithinLimit(body: unknown): void {
  for (const m of Array.isArray(body) ? body : [body]) assertToolNameLength(m);
  if (!Array.isArray(body)) return;
  const max = getConfig().limits.mcpBatchMax;
  if (max === 0) throw limitReached("DUALMIND_MCP_BATCH_MAX", "this server does not accept JSON-RPC batches: send one call per request");
  if (body.length > max) throw limitReached("DUALMIND_MCP_BATCH_MAX", `a JSON-RPC batch may hold at most ${max} calls; this one holds ${body.length}`);
}

export async function handleMcpPost(request: Request): Promise<Response> {
  let principal;
  try {
    principal = await authenticateBearer(request);
  } catch (e) {
    const res = errorResponse(e, randomUUID());
    res.headers.set("www-authenticate", 'Bearer realm="dualmind"');
    return res;
  }
  // The body goes through the REST API's limits: size (413) and nesting depth (400), answered with the one envelope.
  // Text that is not JSON is left to the transport, which answers with the JSON-RPC parse error MCP clients expect.
  let parsedBody: unknown;
  if (/^application\/json\b/i.test(request.headers.get("content-type") ?? "")) {
    try {
      const text = await readBodyLimited(request, getConfig().maxBodyBytes);
      try {
        parsedBody = JSON.parse(text);
      } catch {
        request = new Request(request.url, { method: request.method, headers: request.headers, body: text });
      }
      assertJsonDepth(parsedBody);
      assertBatchWithinLimit(parsedBody);
    } catch (e) {
      return errorResponse(e, randomUUID());
    }
  }
  const server = createMcpServer({ principal });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: getConfig().maxBodyBytes });
  await server.connect(transport);
  try {
    return await holdingStoreHandles(() => withSharedQueryBudget(() => transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody })));
  } finally {
    await server.close();
  }
}

/** Stateless server: no standalone SSE stream and no sessions to delete. */
export function mcpMethodNotAllowed(): Response {
  const err = new AppError("method_not_allowed", "this MCP endpoint is stateless: POST JSON-RPC messages");
  return Response.json(err.toBody(), { status: err.status, headers: { allow: "POST" } });
}
