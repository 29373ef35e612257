import { randomUUID } from "node:crypto";
import { z, ZodError, type ZodType } from "zod";
import { getConfig } from "../config";
import { AppError, infrastructureError, isAppError, type ErrorDetail } from "../errors";
import { assertStoresAllowed, hasScope, type AgentPrincipal, type Scope } from "../auth/tokens";
import { governance } from "../backend/governance";
import { holdingStoreHandles } from "../db/connection";
import { withinWorkScope } from "../db/work-scope";
import { isAnswer } from "../http/answer";
import { log } from "../log";
import { parseJsonBody, readBodyLimited } from "../http/body";
import { recordRequest } from "../http/request-timer";
import { assertMatchesContract, contractChecksEnabled, successStatuses, toWire } from "./contract";
import { storesReferenced } from "./store-refs";
import { assertStoresWritable } from "../db/store-lifecycle";
import { actorOf } from "../auth/actor";

type RouteContext = { params: Promise<Record<string, string | string[] | undefined>> };

export type HandlerArgs<P, Q, B> = {
  params: P;
  query: Q;
  body: B;
  principal: AgentPrincipal | null;
  request: Request;
};

type RouteSpec<P extends ZodType, Q extends ZodType, B extends ZodType> = {
  /** Route id for timing, e.g. "GET /stores/{store}". */
  name: string;
  /** "public" needs no token; otherwise the minimum scope. */
  auth: "public" | Scope;
  /**
   * The successful answer's body, in the wire's snake_case (see contract.ts):
   * the handler's result is renamed by it, documented from it and, under
   * DUALMIND_CHECK_RESPONSES, checked against it.
   */
  response: ZodType;
  /**
   * The route acts beyond any one store (token management, the whole
   * dialectic ledger): a token limited to some stores is refused (403).
   */
  allStores?: boolean;
  /**
   * A write or admin route (any method but GET) is refused with 409
   * store_archived when a store it names is archived; the store lifecycle
   * routes themselves (archive, unarchive, delete) say "allowed".
   */
  archivedStores?: "allowed";
  params?: P;
  query?: Q;
  /** The query's parse for its common shape without the schema (the same output), or null: the schema parses it. */
  commonQuery?: (raw: Record<string, string | string[]>) => z.output<Q> | null;
  body?: B;
  maxBodyBytes?: number;
  /** Status for a successful JSON answer; a handler that decides per call returns respondCreated(...). */
  status?: number;
  /** One line for the OpenAPI document and the API reference page. */
  description?: string;
  handler: (args: HandlerArgs<z.output<P>, z.output<Q>, z.output<B>>) => unknown | Promise<unknown>;
};

export function zodDetails({ error: e, prefix }: { error: ZodError; prefix?: string }): ErrorDetail[] {
  return e.issues.map((i) => ({
    path: [prefix, ...i.path.map(String)].filter(Boolean).join("."),
    message: i.message,
    code: i.code,
  }));
}

/** Map anything thrown to the one typed error. Unknown errors are logged and become a 500. */
export function toAppError({ error: e, requestId }: { error: unknown; requestId: string }): AppError {
  if (isAppError(e)) return e;
  if (e instanceof ZodError) return new AppError("invalid_request", "invalid input", zodDetails({ error: e }));
  const infra = infrastructureError(e);
  if (infra) {
    if (infra.status < 500) log("info", "refused by the database", { requestId, error: infra.message });
    else log("error", infra.status === 507 ? "disk full" : "database busy", { requestId, error: String(e) });
    return infra;
  }
  log("error", "unhandled error", { requestId, error: e instanceof Error ? e.stack : String(e) });
  return new AppError("internal", `internal error (request ${requestId})`);
}

/** Map anything thrown to the one envelope. */
export function errorResponse({ error: e, requestId }: { error: unknown; requestId: string }): Response {
  const err = toAppError({ error: e, requestId });
  return Response.json(err.toBody(), { status: err.status, headers: { "x-request-id": requestId } });
}

/** The principal of an `Authorization: Bearer` header; shared by the REST wrapper and the MCP endpoint. */
export async function authenticateBearer(request: Request): Promise<AgentPrincipal> {
  const header = request.headers.get("authorization");
  if (!header) throw new AppError("unauthorized", "missing bearer token (Authorization: Bearer dm_...)");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new AppError("unauthorized", "Authorization header must be 'Bearer <token>'");
  const principal = await governance().verifyApiToken({ token: match[1] });
  if (!principal) throw new AppError("unauthorized", "invalid or revoked token");
  return principal;
}

function queryObject(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    out[key] = all.length === 1 ? all[0] : all;
  }
  return out;
}

function parseWith<S extends ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new AppError("invalid_request", `invalid ${where}`, zodDetails({ error: result.error, prefix: where }));
  return result.data;
}

/** Whether the route changes what the stores it names hold (see RouteSpec.archivedStores). */
function writesStores(spec: { auth: RouteSpec<ZodType, ZodType, ZodType>["auth"]; archivedStores?: "allowed" }, request: Request): boolean {
  return (spec.auth === "write" || spec.auth === "admin") && spec.archivedStores !== "allowed" && request.method !== "GET" && request.method !== "HEAD";
}

/** What the OpenAPI generator reads from every handler made by defineRoute. */
export type RouteDescription = Pick<RouteSpec<ZodType, ZodType, ZodType>, "name" | "auth" | "allStores" | "params" | "query" | "body" | "response" | "status" | "description">;
export type DescribedHandler = ((request: Request, context?: RouteContext) => Promise<Response>) & { route: RouteDescription };

/**
 * The one wrapper for every /api/v1 route: bearer auth and scope, store
 * allow-list (every store the params, query and body refer to: see
 * store-refs.ts), zod parsing of params/query/body, body size and depth
 * limits, the response contract (snake_case wire form, checked in tests),
 * error envelope, timing.
 */
export function defineRoute<P extends ZodType = ZodType<Record<string, never>>, Q extends ZodType = ZodType<Record<string, never>>, B extends ZodType = ZodType<undefined>>(
  spec: RouteSpec<P, Q, B>,
): DescribedHandler {
  const { name, auth, allStores, params, query, body, response, status, description } = spec;
  return Object.assign(handle, { route: { name, auth, allStores, params, query, body, response, status, description } });

  async function handle(request: Request, context?: RouteContext): Promise<Response> {
    const started = performance.now();
    const requestId = randomUUID();
    let response: Response;
    try {
      const principal = spec.auth === "public" ? null : await authenticateBearer(request);
      if (principal && spec.auth !== "public" && !hasScope({ principal, needed: spec.auth })) {
        throw new AppError("forbidden", `this token lacks the '${spec.auth}' scope`);
      }
      if (principal && spec.allStores && principal.stores !== null) {
        throw new AppError("forbidden", "this route needs a token that is not limited to some stores");
      }
      const rawParams = (await context?.params) ?? {};
      const params = spec.params ? parseWith(spec.params, rawParams, "params") : (rawParams as z.output<P>);
      const named = spec.params ? storesReferenced({ schema: spec.params, value: params }) : typeof rawParams.store === "string" ? [rawParams.store] : [];
      // Each part is checked as soon as it is parsed, so a forbidden store is refused before the body is read.
      if (principal) assertStoresAllowed({ principal, stores: named });
      const rawQuery = spec.query ? queryObject(new URL(request.url)) : null;
      const query = spec.query ? (spec.commonQuery?.(rawQuery!) ?? parseWith(spec.query, rawQuery, "query")) : ({} as z.output<Q>);
      named.push(...storesReferenced({ schema: spec.query, value: query }));
      if (principal) assertStoresAllowed({ principal, stores: named });
      let body = undefined as z.output<B>;
      if (spec.body) {
        const type = request.headers.get("content-type") ?? "";
        if (!/^application\/json\b/i.test(type)) {
          throw new AppError("unsupported_media_type", "send the body as application/json");
        }
        const text = await readBodyLimited({ request, limit: spec.maxBodyBytes ?? getConfig().maxBodyBytes });
        body = parseWith(spec.body, parseJsonBody(text), "body");
        named.push(...storesReferenced({ schema: spec.body, value: body }));
        if (principal) assertStoresAllowed({ principal, stores: named });
      }
      if (writesStores(spec, request)) await assertStoresWritable(named);
      const result = await withinWorkScope({ part: { writer: { tokenLabel: principal?.label ?? null, actor: principal ? actorOf(principal) : null } }, fn: () => holdingStoreHandles({ work: () => spec.handler({ params, query, body, principal, request }) }) });
      // A handler returns data (or respondCreated(data, ...)); its own Response would skip the contract and lose the request id.
      if (result instanceof Response) throw new Error(`${spec.name}: handlers return data, not a Response`);
      const answer = isAnswer(result) ? result : { body: result, status: spec.status ?? 200, contentType: undefined };
      const wire = answer.contentType ? answer.body : toWire({ schema: spec.response, value: answer.body ?? null, opts: { undeclared: contractChecksEnabled() ? "keep" : "strip" } });
      if (contractChecksEnabled()) {
        assertMatchesContract({ schema: spec.response, wire, what: spec.name });
        if (!successStatuses(spec).includes(answer.status)) throw new AppError("internal", `${spec.name} answered ${answer.status}, which it does not document`);
      }
      response = answer.contentType
        ? new Response(String(wire), { status: answer.status, headers: { "content-type": answer.contentType, "x-request-id": requestId } })
        : Response.json(wire, { status: answer.status, headers: { "x-request-id": requestId } });
    } catch (e) {
      response = errorResponse({ error: e, requestId });
    }
    recordRequest({ route: spec.name, status: response.status, ms: performance.now() - started });
    return response;
  }
}
