/**
 * Which stores a request touches, read from its parsed input by schema: every
 * field named `store`, wherever it sits (nested objects and arrays included),
 * and `core` when `include_core: true`. The REST wrapper and the MCP runner
 * check each against the token's allow-list, so a new route or tool is
 * covered by itself. The walk follows the schema, not the data: a `store` key
 * inside free-form JSON is never mistaken for a store reference.
 */
import type { ZodType } from "zod";
import { defOf, wrappedSchema } from "./zod-def";
import { CORE_STORE } from "../db/store-names";

/** Field name → the stores its parsed value refers to. */
const STORE_FIELDS: Record<string, (value: unknown) => string[]> = {
  store: (v) => (typeof v === "string" ? [v] : []),
  include_core: (v) => (v === true ? [CORE_STORE] : []),
};


type Child = { key: string | number | "[]" | null; schema: ZodType };

/** Schemas are built once at module load, so their shape is read once too (the walk runs on every request). */
const childrenCache = new WeakMap<ZodType, Child[]>();

function children(schema: ZodType): Child[] {
  let found = childrenCache.get(schema);
  if (!found) childrenCache.set(schema, (found = readChildren(schema)));
  return found;
}

/** The schemas a value of `schema` is checked against, one level down, with how to reach the value. */
function readChildren(schema: ZodType): Child[] {
  const def = defOf(schema);
  const inner = wrappedSchema(def);
  if (inner) return [{ key: null, schema: inner }];
  switch (def.type) {
    case "object":
      return Object.entries(def.shape ?? {}).map(([key, s]) => ({ key, schema: s }));
    case "array":
      return def.element ? [{ key: "[]", schema: def.element }] : [];
    case "tuple":
      return [...(def.items ?? []).map((s, i) => ({ key: i, schema: s })), ...(def.rest ? [{ key: "[]" as const, schema: def.rest }] : [])];
    case "union":
      return (def.options ?? []).map((s) => ({ key: null, schema: s }));
    case "intersection":
      return [def.left, def.right].filter((s): s is ZodType => !!s).map((s) => ({ key: null, schema: s }));
    case "pipe": {
      // The parsed value is the output side; a transform's output has no schema, so fall back to its input.
      const out = def.out && defOf(def.out).type !== "transform" ? def.out : def.in;
      return out ? [{ key: null, schema: out }] : [];
    }
    default:
      // lazy (z.json()), record, map, set and scalars: no declared store fields inside.
      return [];
  }
}

/** Every store the parsed `value` of `schema` refers to (deduplicated, in order of appearance). */
export function storesReferenced({ schema, value }: { schema: ZodType | undefined; value: unknown }): string[] {
  const found = new Set<string>();
  const visit = (s: ZodType, v: unknown) => {
    if (v === null || v === undefined) return;
    for (const child of children(s)) {
      if (child.key === null) visit(child.schema, v);
      else if (child.key === "[]") {
        if (Array.isArray(v)) for (const item of v) visit(child.schema, item);
      } else if (typeof v === "object") {
        const field = (v as Record<string | number, unknown>)[child.key];
        const refers = typeof child.key === "string" ? STORE_FIELDS[child.key] : undefined;
        if (refers) for (const store of refers(field)) found.add(store);
        visit(child.schema, field);
      }
    }
  };
  if (schema) visit(schema, value);
  return [...found];
}

/**
 * Where a schema declares store references, as paths ("store",
 * "records[].store", "include_core"). For tests and docs: what the wrapper
 * will check for this input.
 */
export function storeReferencePaths(schema: ZodType | undefined): string[] {
  const found = new Set<string>();
  const visit = (s: ZodType, path: string, seen: Set<ZodType>) => {
    if (seen.has(s)) return;
    const next = new Set(seen).add(s);
    for (const child of children(s)) {
      if (child.key === null) visit(child.schema, path, next);
      else if (child.key === "[]" || typeof child.key === "number") visit(child.schema, `${path}[]`, next);
      else {
        const p = path ? `${path}.${child.key}` : child.key;
        if (STORE_FIELDS[child.key]) found.add(p);
        visit(child.schema, p, next);
      }
    }
  };
  if (schema) visit(schema, "", new Set());
  return [...found].sort();
}
