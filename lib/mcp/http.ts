/**
 * The Streamable HTTP side of MCP, framework-free (Web Request → Response).
 * Stateless: every POST authenticates its bearer token and gets a fresh
 * server bound to that principal, so scopes and store allow-lists are the
 * token's, exactly as on the REST API — except tools/list, whose answer is
 * the same for every token and is served from one serialized copy.
 */
import { randomUUID } from "node:crypto";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { authenticateBearer, errorResponse } from "../api/route";
import { assertJsonDepth, readBodyLimited } from "../http/body";
import { getConfig } from "../config";
import { limitReached } from "../common";
import { withSharedQueryBudget } from "../db/query-budget";
import { holdingStoreHandles } from "../db/connection";
import { AppError } from "../errors";
import { createMcpServer, listToolDescriptors } from "./server";

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
  if (max === 0) throw limitReached({ limit: "DUALMIND_MCP_BATCH_MAX", message: "this server does not accept JSON-RPC batches: send one call per request" });
  if (body.length > max) throw limitReached({ limit: "DUALMIND_MCP_BATCH_MAX", message: `a JSON-RPC batch may hold at most ${max} calls; this one holds ${body.length}` });
}

/** tools/list's answer around its id, as UTF-8 once: a body given as a string is checked and encoded again on every answer. */
let toolsListBytes: { head: Uint8Array; tail: Uint8Array } | null = null;
const utf8 = new TextEncoder();

/** The transport's own shape, `{ result, jsonrpc, id }`, with the request's id put in. */
function toolsListBody(id: string | number): Uint8Array<ArrayBuffer> {
  toolsListBytes ??= { head: utf8.encode(`{"result":${JSON.stringify({ tools: listToolDescriptors() })},"jsonrpc":"2.0","id":`), tail: utf8.encode("}") };
  const { head, tail } = toolsListBytes;
  const idBytes = utf8.encode(JSON.stringify(id));
  const body = new Uint8Array(head.length + idBytes.length + tail.length);
  body.set(head);
  body.set(idBytes, head.length);
  body.set(tail, head.length + idBytes.length);
  return body;
}

/**
 * tools/list answered without an MCP server and transport for the request: its answer is the same for every principal
 * (the tool descriptors, made once), so it is serialized once and only the request's id is put in. Only a plain
 * single tools/list call the SDK's transport would accept is answered here (JSON-RPC 2.0, an id, no params but a
 * cursor or _meta, a supported protocol version, an Accept of JSON and event streams); anything else goes through it.
 */
function toolsListAnswer(request: Request, body: unknown): Response | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const m = body as { jsonrpc?: unknown; method?: unknown; id?: unknown; params?: unknown };
  if (m.jsonrpc !== "2.0" || m.method !== "tools/list" || !(typeof m.id === "string" || (typeof m.id === "number" && Number.isInteger(m.id)))) return null;
  if (Object.keys(m).some((k) => k !== "jsonrpc" && k !== "method" && k !== "id" && k !== "params")) return null;
  if (m.params !== undefined) {
    if (typeof m.params !== "object" || m.params === null || Array.isArray(m.params)) return null;
    const p = m.params as { cursor?: unknown; _meta?: unknown };
    if (Object.keys(p).some((k) => k !== "cursor" && k !== "_meta") || (p.cursor !== undefined && typeof p.cursor !== "string") || (p._meta !== undefined && (typeof p._meta !== "object" || p._meta === null))) return null;
  }
  const accept = request.headers.get("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return null;
  const version = request.headers.get("mcp-protocol-version");
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return null;
  // The transport's own shape: { result, jsonrpc, id }, application/json, 200.
  return new Response(toolsListBody(m.id), { status: 200, headers: { "content-type": "application/json" } });
}

export async function handleMcpPost(request: Request): Promise<Response> {
  let principal;
  try {
    principal = await authenticateBearer(request);
  } catch (e) {
    const res = errorResponse({ error: e, requestId: randomUUID() });
    res.headers.set("www-authenticate", 'Bearer realm="dualmind"');
    return res;
  }
  // The body goes through the REST API's limits: size (413), nesting depth (400) and batch length (422), answered
  // with the one envelope — whatever its Content-Type says, so no spelling the transport accepts and this check does
  // not (the transport parses the header its own way) reaches a tool unchecked. Text that is not JSON is left to the
  // transport, which answers with the JSON-RPC parse error (or 415) MCP clients expect.
  let parsedBody: unknown;
  try {
    const text = await readBodyLimited({ request, limit: getConfig().maxBodyBytes });
    try {
      parsedBody = JSON.parse(text);
    } catch {
      request = new Request(request.url, { method: request.method, headers: request.headers, body: text });
    }
    assertJsonDepth(parsedBody);
    assertBatchWithinLimit(parsedBody);
  } catch (e) {
    return errorResponse({ error: e, requestId: randomUUID() });
  }
  const listed = toolsListAnswer(request, parsedBody);
  if (listed) return listed;
  const server = createMcpServer({ principal });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: getConfig().maxBodyBytes });
  await server.connect(transport);
  try {
    return await holdingStoreHandles({ work: () => withSharedQueryBudget({ fn: () => transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody }) }) });
  } finally {
    await server.close();
  }
}

/** Stateless server: no standalone SSE stream and no sessions to delete. */
export function mcpMethodNotAllowed(): Response {
  const err = new AppError("method_not_allowed", "this MCP endpoint is stateless: POST JSON-RPC messages");
  return Response.json(err.toBody(), { status: err.status, headers: { allow: "POST" } });
}
