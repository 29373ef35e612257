/**
 * The response side of the API contract, shared by the REST wrapper and the
 * MCP runner. The wire is snake_case, like the domain objects
 * (tests/wire-casing.test.ts holds it), so `toWire` renames nothing: it keeps
 * each object's declared keys and strips undeclared ones where the schema is
 * strict; free-form values (z.record / z.unknown) pass untouched. With
 * DUALMIND_CHECK_RESPONSES every answer is parsed with its schema after the
 * client's JSON round trip; a mismatch is a 500 naming the field, so every
 * route test is a contract test.
 */
import { z, type ZodType } from "zod";
import { defOf, wrappedSchema, type ZodDef } from "./zod-def";
import { getConfig } from "../config";
import { AppError, ERROR_STATUS } from "../errors";


function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}

type ObjectFields = { fields: { key: string; child: ZodType }[]; keepsUndeclared: boolean };

/** Schemas are built once at module load, so an object's declared keys are worked out once (toWire runs on every answer). */
const objectFieldsCache = new WeakMap<ZodType, ObjectFields>();

function objectFields(schema: ZodType, def: ZodDef): ObjectFields {
  let found = objectFieldsCache.get(schema);
  if (!found) {
    found = {
      fields: Object.entries(def.shape ?? {}).map(([key, child]) => ({ key, child })),
      keepsUndeclared: !!def.catchall && defOf(def.catchall).type !== "never",
    };
    objectFieldsCache.set(schema, found);
  }
  return found;
}

/** How well a value fits one branch of a union: declared keys present; -1 when a literal field says it is another branch. */
function branchScore(schema: ZodType, value: unknown): number {
  const def = defOf(schema);
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "readonly":
      return def.innerType ? branchScore(def.innerType, value) : 0;
    case "lazy":
      return def.getter ? branchScore(def.getter(), value) : 0;
    case "object": {
      if (!isPlainObject(value)) return -1;
      let score = 0;
      for (const [key, child] of Object.entries(def.shape ?? {})) {
        if (!(key in value)) continue;
        const childDef = defOf(child);
        if (childDef.type === "literal" && !(childDef.values ?? []).includes(value[key])) return -1;
        score++;
      }
      return score;
    }
    case "array":
      return Array.isArray(value) ? 0 : -1;
    case "record":
      return isPlainObject(value) ? 0 : -1;
    default:
      return schema.safeParse(value).success ? 0 : -1;
  }
}

/**
 * Undeclared keys: `strip` in production (a field nobody declared never leaks), `keep` when responses are
 * checked, so the check sees the field and refuses the answer naming it.
 */
export type WireOptions = { undeclared: "keep" | "strip" };

/** The wire form of a domain value: each object's declared keys, undeclared ones kept or stripped by `opts`, values as they were. */
export function toWire({ schema, value, opts = { undeclared: "strip" } }: { schema: ZodType; value: unknown; opts?: WireOptions }): unknown {
  return converterOf(schema)(value, opts.undeclared === "keep");
}

/** One schema's wire conversion; `keep`: undeclared keys stay (WireOptions "keep"). */
type Converter = (value: unknown, keep: boolean) => unknown;

/** Schemas are built once at module load, so each one's conversion is worked out once (toWire runs on every answer). */
const converters = new WeakMap<ZodType, Converter>();

function converterOf(schema: ZodType): Converter {
  const known = converters.get(schema);
  if (known) return known;
  // Set before the children are built: a recursive schema (z.lazy) reaches itself through this entry.
  let built: Converter | null = null;
  const converter: Converter = (value, keep) => (value === null || value === undefined ? value : (built ??= buildConverter(schema))(value, keep));
  converters.set(schema, converter);
  return converter;
}

function buildConverter(schema: ZodType): Converter {
  const def = defOf(schema);
  const inner = wrappedSchema(def);
  if (inner) return converterOf(inner);
  switch (def.type) {
    case "object": {
      const { fields, keepsUndeclared } = objectFields(schema, def);
      const children = fields.map(({ key, child }) => ({ key, convert: converterOf(child) }));
      return (value, keep) => {
        if (!isPlainObject(value)) return value;
        const out: Record<string, unknown> = {};
        // Undeclared keys go out only where the schema allows extra keys (a catchall or a loose object); a strict or
        // plain object strips them, so a domain field nobody declared (a hash, an internal id) never leaks in production.
        // Under test the response check refuses them instead, naming the field.
        for (const { key, convert } of children) if (key in value) out[key] = convert(value[key], keep);
        if (keep || keepsUndeclared) for (const [key, v] of Object.entries(value)) if (!(key in out)) out[key] = v;
        return out;
      };
    }
    case "array": {
      const element = def.element ? converterOf(def.element) : null;
      return (value, keep) => (Array.isArray(value) && element ? value.map((v) => element(v, keep)) : value);
    }
    case "tuple": {
      const items = (def.items ?? []).map(converterOf);
      const rest = def.rest ? converterOf(def.rest) : null;
      return (value, keep) => (Array.isArray(value) ? value.map((v, i) => { const c = items[i] ?? rest; return c ? c(v, keep) : v; }) : value);
    }
    case "record": {
      const valueType = def.valueType ? converterOf(def.valueType) : null;
      return (value, keep) => (!isPlainObject(value) || !valueType ? value : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, valueType(v, keep)])));
    }
    case "lazy":
      return (value, keep) => (def.getter ? converterOf(def.getter())(value, keep) : value);
    case "pipe":
      return def.in ? converterOf(def.in) : (value) => value;
    case "union": {
      const options = def.options ?? [];
      return (value, keep) => {
        let best: ZodType | null = null;
        let bestScore = -1;
        for (const option of options) {
          const score = branchScore(option, value);
          if (score > bestScore) [best, bestScore] = [option, score];
        }
        return best ? converterOf(best)(value, keep) : value;
      };
    }
    default:
      // Scalars, enums, literals, unknown: nothing to rename.
      return (value) => value;
  }
}

const CREATED_OR_EXISTING = new WeakSet<ZodType>();

/**
 * Marks a response schema whose route answers 201 for a new record and 200
 * when a retry (same client id), a duplicate or a merge found an existing one
 * (the handler returns respondCreated(body, isNew)).
 */
export function createdOrExisting<T extends ZodType>(schema: T): T {
  CREATED_OR_EXISTING.add(schema);
  return schema;
}

/** The success statuses a route documents (and, under the contract check, may answer with). */
export function successStatuses(route: { response: ZodType; status?: number }): number[] {
  return CREATED_OR_EXISTING.has(route.response) ? [201, 200] : [route.status ?? 200];
}

/** Whether answers are checked against their schemas (tests, reliability servers; never by default in production). */
export function contractChecksEnabled(): boolean {
  return getConfig().checkResponses;
}

/**
 * Parse a wire answer as the client will see it (after JSON) with its
 * schema; a mismatch is a server fault that names every wrong field.
 */
export function assertMatchesContract({ schema, wire, what }: { schema: ZodType; wire: unknown; what: string }): void {
  const json: unknown = wire === undefined ? null : JSON.parse(JSON.stringify(wire));
  const result = schema.safeParse(json);
  if (result.success) return;
  const details = result.error.issues.map((i) => ({ path: ["response", ...i.path.map(String)].join("."), message: i.message, code: i.code }));
  throw new AppError("internal", `${what}: the answer does not match its declared response schema`, details);
}

/** The one error envelope, as a schema: the OpenAPI document's `Error` component and what tests check error answers against. */
export const errorEnvelopeSchema = z
  .object({
    error: z
      .object({
        code: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]),
        message: z.string(),
        details: z.array(z.object({ path: z.string().optional(), message: z.string() }).catchall(z.unknown())),
      })
      .strict(),
  })
  .strict();
