/**
 * The Streamable HTTP side of MCP, framework-free (Web Request → Response).
 * Stateless: every POST authenticates its bearer token and gets a fresh
 * server bound to that principal, so scopes and store allow-lists are the
 * token's, exactly as on the REST API.
 */
import { randomUUID } from "node:crypto";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { authenticateBearer, errorResponse } from "../api/route";
import { getConfig } from "../config";
import { AppError } from "../errors";
import { createMcpServer } from "./server";

export async function handleMcpPost(request: Request): Promise<Response> {
  let principal;
  try {
    principal = authenticateBearer(request);
  } catch (e) {
    const res = errorResponse(e, randomUUID());
    res.headers.set("www-authenticate", 'Bearer realm="dualmind"');
    return res;
  }
  const server = createMcpServer({ principal });
  // Same body limit as the REST API: a tool call is no bigger than its route's request.
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: getConfig().maxBodyBytes });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}

/** Stateless server: no standalone SSE stream and no sessions to delete. */
export function mcpMethodNotAllowed(): Response {
  const err = new AppError("method_not_allowed", "this MCP endpoint is stateless: POST JSON-RPC messages");
  return Response.json(err.toBody(), { status: err.status, headers: { allow: "POST" } });
}
