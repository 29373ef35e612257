/**
 * OpenAPI 3.1 from the routes' own zod schemas: every handler made by
 * defineRoute carries its spec, so the document cannot drift from what the
 * handlers validate (inputs: input side of each schema, defaults are
 * optional) and answer (responses: output side of the declared response
 * schema, which tests check every answer against; errors: the one envelope).
 */
import { z, type ZodType } from "zod";
import { ERROR_STATUS } from "../errors";
import { versions } from "../version";
import { errorEnvelopeSchema, successStatuses } from "./contract";
import { type DescribedHandler, type RouteDescription } from "./route";

type JsonSchema = Record<string, unknown>;
export type RouteModule = Record<string, unknown>;

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
const API_PREFIX = "/api/v1";

function jsonSchemaOf(schema: ZodType, io: "input" | "output" = "input"): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  return rest;
}

/** Query strings are flat: a union of objects contributes every property it may take. */
function queryProperties(schema: JsonSchema): { props: Record<string, JsonSchema>; required: Set<string> } {
  const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (branches) {
    const props: Record<string, JsonSchema> = {};
    for (const b of branches) Object.assign(props, queryProperties(b).props);
    return { props, required: new Set() };
  }
  return { props: (schema.properties ?? {}) as Record<string, JsonSchema>, required: new Set((schema.required ?? []) as string[]) };
}

export type OpenApiOperation = { method: (typeof METHODS)[number]; path: string; route: RouteDescription };

function isDescribed(value: unknown): value is DescribedHandler {
  return typeof value === "function" && "route" in value && typeof (value as { route?: { name?: unknown } }).route?.name === "string";
}

/** Every documented operation of the given route modules, sorted by path then method. */
export function listOperations(modules: RouteModule[]): OpenApiOperation[] {
  const ops: OpenApiOperation[] = [];
  for (const mod of modules) {
    for (const method of METHODS) {
      const handler = mod[method];
      if (!isDescribed(handler)) continue;
      const m = /^([A-Z]+) (\/\S*)$/.exec(handler.route.name);
      if (!m || m[1] !== method) continue;
      ops.push({ method, path: API_PREFIX + m[2], route: handler.route });
    }
  }
  return ops.sort((a, b) => a.path.localeCompare(b.path) || METHODS.indexOf(a.method) - METHODS.indexOf(b.method));
}

const errorResponses = Object.fromEntries(
  ([400, 401, 403, 404, 409, 413, 422, 500] as const).map((status) => [
    String(status),
    {
      description: Object.entries(ERROR_STATUS)
        .filter(([, s]) => s === status)
        .map(([code]) => code)
        .join(" | "),
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    },
  ]),
);

const SUCCESS_DESCRIPTIONS: Record<number, string> = { 200: "success", 201: "created", 202: "accepted: the job runs in the background" };

function successResponses(route: RouteDescription): Record<string, JsonSchema> {
  const statuses = successStatuses(route);
  const schema = jsonSchemaOf(route.response, "output");
  return Object.fromEntries(
    statuses.map((status) => [
      String(status),
      { description: statuses.length > 1 && status === 200 ? "an existing record: a retry with the same id, a duplicate or a merge" : SUCCESS_DESCRIPTIONS[status] ?? "success", content: { "application/json": { schema } } },
    ]),
  );
}

function operationObject(op: OpenApiOperation): JsonSchema {
  const { route } = op;
  const parameters: JsonSchema[] = [];
  if (route.params) {
    const { props } = queryProperties(jsonSchemaOf(route.params));
    for (const [name, schema] of Object.entries(props)) parameters.push({ name, in: "path", required: true, schema });
  }
  if (route.query) {
    const { props, required } = queryProperties(jsonSchemaOf(route.query));
    for (const [name, schema] of Object.entries(props)) parameters.push({ name, in: "query", required: required.has(name) && !("default" in schema), schema });
  }
  const tag = op.path.slice(API_PREFIX.length).split("/")[1] ?? "api";
  return {
    operationId: `${op.method.toLowerCase()}${op.path.slice(API_PREFIX.length).replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
    summary: route.description ?? route.name,
    tags: [tag],
    "x-required-scope": route.auth,
    // Token management and whole-ledger dialectic routes refuse store-limited tokens.
    ...(route.allStores ? { "x-requires-unrestricted-token": true } : {}),
    ...(route.auth === "public" ? { security: [] } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(route.body) } } } } : {}),
    responses: {
      ...successResponses(route),
      ...errorResponses,
    },
  };
}

/** The whole OpenAPI 3.1 document. */
export function buildOpenApiDocument(modules: RouteModule[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of listOperations(modules)) {
    paths[op.path] ??= {};
    paths[op.path][op.method.toLowerCase()] = operationObject(op);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "dualmind API",
      version: versions().app,
      description: "Memory (System 1) and governance (System 2) for AI agents. Send `Authorization: Bearer dm_...`; scopes nest admin ⊃ write ⊃ read. The same operations are MCP tools at /api/mcp.",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "API token (dm_...) from the admin page or `dualmind tokens create`" } },
      schemas: { Error: jsonSchemaOf(errorEnvelopeSchema, "output") },
    },
    paths,
  };
}

export type ReferenceField = { name: string; where: "path" | "query" | "body"; type: string; required: boolean };
export type ReferenceEntry = {
  method: string;
  path: string;
  scope: string;
  summary: string;
  fields: ReferenceField[];
  /** Success statuses, e.g. ["201", "200"]. */
  statuses: string[];
  /** The success body's shape, TypeScript-like, from the response schema. */
  response: string;
};

function typeLabel(schema: JsonSchema): string {
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(" | ");
  const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (branches) return [...new Set(branches.map(typeLabel))].join(" | ");
  if (schema.type === "array") return `${typeLabel((schema.items ?? {}) as JsonSchema)}[]`;
  return typeof schema.type === "string" ? schema.type : "any";
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A JSON Schema as a TypeScript-like type, indented; what the API reference page shows for each response. */
export function shapeLabel({ schema, indent = "" }: { schema: JsonSchema; indent?: string }): string {
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(" | ");
  const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (branches) return [...new Set(branches.map((b) => shapeLabel({ schema: b, indent })))].join(" | ");
  if (schema.type === "array") {
    if (Array.isArray(schema.prefixItems)) return `[${(schema.prefixItems as JsonSchema[]).map((b) => shapeLabel({ schema: b, indent })).join(", ")}]`;
    const items = (schema.items ?? {}) as JsonSchema;
    const item = shapeLabel({ schema: items, indent });
    const isUnion = !!(items.anyOf ?? items.oneOf) || (Array.isArray(items.enum) && items.enum.length > 1) || Array.isArray(items.type);
    return isUnion ? `(${item})[]` : `${item}[]`;
  }
  if (schema.type === "object" || schema.properties) {
    const props = Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>);
    const extra = schema.additionalProperties;
    if (props.length === 0) return extra && typeof extra === "object" ? `{ [key: string]: ${shapeLabel({ schema: extra as JsonSchema, indent })} }` : "{ [key: string]: any }";
    const required = new Set((schema.required ?? []) as string[]);
    const inner = indent + "  ";
    const lines = props.map(([name, s]) => `${inner}${IDENTIFIER.test(name) ? name : JSON.stringify(name)}${required.has(name) ? "" : "?"}: ${shapeLabel({ schema: s, indent: inner })};`);
    return `{\n${lines.join("\n")}\n${indent}}`;
  }
  if (Array.isArray(schema.type)) return (schema.type as string[]).map((t) => shapeLabel({ schema: { ...schema, type: t }, indent })).join(" | ");
  if (typeof schema.type === "string") return schema.type;
  if ("not" in schema) return "never";
  return "any";
}

/** The document flattened for the dashboard's API reference page. */
export function buildApiReference(modules: RouteModule[]): ReferenceEntry[] {
  const doc = buildOpenApiDocument(modules) as { paths: Record<string, Record<string, JsonSchema>> };
  const out: ReferenceEntry[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const fields: ReferenceField[] = ((op.parameters ?? []) as JsonSchema[]).map((p) => ({ name: String(p.name), where: p.in as "path" | "query", type: typeLabel(p.schema as JsonSchema), required: p.required === true }));
      const body = (op.requestBody as { content: Record<string, { schema: JsonSchema }> } | undefined)?.content["application/json"].schema;
      if (body) {
        const { props, required } = queryProperties(body);
        for (const [name, schema] of Object.entries(props)) fields.push({ name, where: "body", type: typeLabel(schema), required: required.has(name) && !("default" in schema) });
      }
      const responses = op.responses as Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
      const statuses = Object.keys(responses).filter((status) => status.startsWith("2"));
      const success = responses[statuses[0]]?.content?.["application/json"]?.schema;
      out.push({ method: method.toUpperCase(), path, scope: String(op["x-required-scope"]), summary: String(op.summary), fields, statuses, response: success ? shapeLabel({ schema: success }) : "none" });
    }
  }
  return out;
}
