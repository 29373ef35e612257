/**
 * The dualmind MCP server for one principal. Built on the SDK's low-level
 * Server so argument validation is ours: tool inputs are parsed with the REST
 * schemas and failures come back as tool errors carrying the REST error
 * envelope (same codes), not as SDK-specific messages.
 */
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { toAppError, zodDetails } from "../api/route";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "../http/body";
import { storesReferenced } from "../api/store-refs";
import { assertStoresWritable } from "../db/store-lifecycle";
import { withinWorkScope } from "../db/work-scope";
import { assertMatchesContract, contractChecksEnabled, toWire } from "../api/contract";
import { assertStoresAllowed, canUseStore, hasScope, type AgentPrincipal } from "../auth/tokens";
import { AppError } from "../errors";
import { limitReached } from "../common";
import { getConfig } from "../config";
import { recordRequest } from "../http/request-timer";
import { stores } from "../stores/backend";
import { versions } from "../version";
import { MCP_TOOLS, type ToolDef } from "./tools";
import { actorOf } from "../auth/actor";

export type McpSessionOptions = {
  principal: AgentPrincipal;
  /** stdio: the `--store` given on the command line fills in a missing `store` argument. */
  defaultStore?: string;
};

const toolsByName = new Map(MCP_TOOLS.map((t) => [t.name, t]));
const MAX_TOOL_NAME_ECHO = 64;
/** Every call of a name that is no tool is timed under this one key, so made-up names cannot grow the metrics. */
export const UNKNOWN_TOOL_ROUTE = "MCP tool (unknown)";

type ObjectSchema = { type: "object"; [k: string]: unknown };
let listedTools: { name: string; description: string; inputSchema: ObjectSchema; outputSchema: ObjectSchema }[] | null = null;

// Results are described in draft-07, the dialect the SDK's client validator (ajv) speaks: 2020-12 tuples would read as "no items".
function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): ObjectSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any", ...(io === "output" ? { target: "draft-7" as const } : {}) }) as Record<string, unknown>;
  return { ...rest, type: "object" };
}

/**
 * JSON Schema of every tool's input (input side: defaults are optional) and
 * result (`outputSchema`: clients check `structuredContent` against it),
 * generated once from the zod schemas.
 */
export function listToolDescriptors() {
  listedTools ??= MCP_TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: jsonSchemaOf(t.input, "input"), outputSchema: jsonSchemaOf(t.output, "output") }));
  return listedTools;
}

function hasStoreArgument(t: ToolDef): boolean {
  return t.input instanceof z.ZodObject && "store" in t.input.shape;
}

/**
 * Run one tool for a principal: scope, argument parsing, store allow-list
 * (every store the arguments refer to: `store`, `include_core`, nested store
 * fields; see store-refs.ts), then the domain function, whose result is
 * renamed to the wire form by the tool's output schema (and checked against
 * it under DUALMIND_CHECK_RESPONSES). Throws AppError like a REST route would.
 */
export async function runTool({ name, args, options }: { name: string; args: Record<string, unknown> | undefined; options: McpSessionOptions }): Promise<unknown> {
  const t = toolsByName.get(name);
  // A made-up name is never echoed whole (it may be megabytes): tools/list names every tool there is.
  if (!t) throw new AppError("not_found", `unknown tool ${JSON.stringify(name.slice(0, MAX_TOOL_NAME_ECHO))}${name.length > MAX_TOOL_NAME_ECHO ? "…" : ""}; tools/list names the tools`);
  const { principal } = options;
  if (!hasScope({ principal, needed: t.scope })) throw new AppError("forbidden", `this token lacks the '${t.scope}' scope`);
  const raw: Record<string, unknown> = { ...(args ?? {}) };
  if (options.defaultStore && raw.store === undefined && hasStoreArgument(t)) raw.store = options.defaultStore;
  // Like a REST path's {store}: a store outside the token's list is refused before the other arguments are looked at.
  if (hasStoreArgument(t) && typeof raw.store === "string") assertStoresAllowed({ principal, stores: [raw.store] });
  // stdio reaches here without the HTTP endpoint's body parser, so the depth limit is applied again.
  if (jsonDepthExceeds({ value: raw, limit: MAX_JSON_DEPTH })) throw new AppError("invalid_request", `arguments nest deeper than ${MAX_JSON_DEPTH} levels`);
  const parsed = t.input.safeParse(raw);
  if (!parsed.success) throw new AppError("invalid_request", "invalid arguments", zodDetails({ error: parsed.error, prefix: "arguments" }));
  const named = storesReferenced({ schema: t.input, value: parsed.data });
  assertStoresAllowed({ principal, stores: named });
  // As the REST wrapper: a write to an archived store is refused (409 store_archived).
  if (t.scope === "write") await assertStoresWritable(named);
  const wire = toWire({ schema: t.output, value: await withinWorkScope({ part: { writer: { tokenLabel: principal.label, actor: actorOf(principal) } }, fn: () => t.run(parsed.data as never, { principal }) }), opts: { undeclared: contractChecksEnabled() ? "keep" : "strip" } });
  if (contractChecksEnabled()) assertMatchesContract({ schema: t.output, wire, what: `MCP tool ${name}` });
  return wire;
}

/** A result as text and as `structuredContent` (which matches the tool's outputSchema); an error is the REST envelope, as text only. */
function toolResult(value: unknown, isError = false): CallToolResult {
  const text = [{ type: "text" as const, text: JSON.stringify(value ?? null) }];
  if (isError) return { content: text, isError: true };
  return { content: text, structuredContent: value as Record<string, unknown> };
}

const RESOURCE_TEMPLATES = [
  { uriTemplate: "dualmind://stores/{store}/chunks/{id}", name: "chunk", description: "One chunk of an indexed document", mimeType: "application/json" },
  { uriTemplate: "dualmind://stores/{store}/memories/{+path}", name: "memory", description: "One memory (frontmatter + body) by path", mimeType: "application/json" },
  { uriTemplate: "dualmind://dialectic/sessions/{id}", name: "dialectic-session", description: "A dialectic session with its transcript", mimeType: "application/json" },
];

/** A resource URI → the tool that reads it, so resources share the tools' checks. */
function resourceCall(uri: string): { name: string; args: Record<string, unknown> } | null {
  let m = /^dualmind:\/\/stores\/([^/]+)\/chunks\/([^/]+)$/.exec(uri);
  if (m) return { name: "read_chunk", args: { store: decodeURIComponent(m[1]), id: decodeURIComponent(m[2]) } };
  m = /^dualmind:\/\/stores\/([^/]+)\/memories\/(.+)$/.exec(uri);
  if (m) return { name: "read_memory", args: { store: decodeURIComponent(m[1]), path: m[2].split("/").map(decodeURIComponent).join("/") } };
  m = /^dualmind:\/\/dialectic\/sessions\/([^/]+)$/.exec(uri);
  if (m) return { name: "dialectic_get", args: { session_id: decodeURIComponent(m[1]) } };
  if (uri === "dualmind://stores") return { name: "list_stores", args: {} };
  return null;
}

export function createMcpServer(options: McpSessionOptions): Server {
  const server = new Server({ name: "dualmind", version: versions().app }, { capabilities: { tools: {}, resources: {} } });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listToolDescriptors() }));

  // The answers of one request (a JSON-RPC batch: tool results with their structuredContent, resources read) share
  // DUALMIND_MCP_BATCH_MAX_BYTES: the first always answers (each tool's list is bounded by DUALMIND_LIST_MAX_BYTES);
  // one that would pass it is refused, and once it is spent every later call is refused before doing its work.
  let answered = 0;
  let spent = false;
  const batchFull = (bytes: number) => {
    const max = getConfig().limits.mcpBatchMaxBytes;
    return limitReached({ limit: "DUALMIND_MCP_BATCH_MAX_BYTES", message: `this request's answers already hold ${answered} bytes${bytes ? ` and this one ${bytes} more` : ""}, past the ${max} one request may carry; send this call on its own` });
  };
  const beforeWork = () => {
    if (spent) throw batchFull(0);
  };
  // The calls of a batch run one after another, so a call after the budget is spent is refused before it starts.
  let turn: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const next = turn.then(work, work);
    turn = next.catch(() => undefined);
    return next;
  };
  const charge = (bytes: number) => {
    const max = getConfig().limits.mcpBatchMaxBytes;
    if (answered > 0 && answered + bytes > max) {
      spent = true;
      throw batchFull(bytes);
    }
    answered += bytes;
    if (answered >= max) spent = true;
  };
  server.setRequestHandler(CallToolRequestSchema, (request) => inTurn(async () => {
    const started = performance.now();
    const name = request.params.name;
    let result: CallToolResult;
    let status = 200;
    try {
      beforeWork();
      result = toolResult(await runTool({ name, args: request.params.arguments, options }));
      const text = result.content.reduce((n, c) => n + (c.type === "text" ? Buffer.byteLength(c.text, "utf8") : 0), 0);
      // structuredContent is the same value again on the wire.
      charge(result.structuredContent === undefined ? text : 2 * text);
    } catch (e) {
      const err = toAppError({ error: e, requestId: randomUUID() });
      status = err.status;
      result = toolResult(err.toBody(), true);
    }
    recordRequest({ route: toolsByName.has(name) ? `MCP tool ${name}` : UNKNOWN_TOOL_ROUTE, status, ms: performance.now() - started });
    return result;
  }));

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [
      { uri: "dualmind://stores", name: "stores", description: "The stores this token may use", mimeType: "application/json" },
      ...(await stores().listStoreNames())
        .filter((store) => canUseStore({ principal: options.principal, store }))
        .map((store) => ({ uri: `dualmind://stores/${store}`, name: `store ${store}`, mimeType: "application/json" })),
    ],
  }));

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: RESOURCE_TEMPLATES }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const storeOnly = /^dualmind:\/\/stores\/([^/]+)$/.exec(uri);
    let call: ReturnType<typeof resourceCall>;
    try {
      call = storeOnly ? { name: "store_health", args: { store: storeOnly[1] } } : resourceCall(uri);
    } catch {
      throw new McpError(ErrorCode.InvalidParams, "the resource URI holds a malformed %-escape");
    }
    if (!call) throw new McpError(ErrorCode.InvalidParams, `unknown resource ${uri}`);
    const resource = call;
    return inTurn(async () => {
      try {
        beforeWork();
        const text = JSON.stringify(await runTool({ name: resource.name, args: resource.args, options }));
        charge(Buffer.byteLength(text, "utf8"));
        return { contents: [{ uri, mimeType: "application/json", text }] };
      } catch (e) {
        const err = toAppError({ error: e, requestId: randomUUID() });
        throw new McpError(ErrorCode.InvalidParams, `${err.code}: ${err.message}`, err.toBody());
      }
    });
  });

  return server;
}
