import type { ZodType } from "zod";

/** The parts of a zod 4 schema definition that the schema walkers (store references, wire casing) read. */
export type ZodDef = {
  type: string;
  shape?: Record<string, ZodType>;
  catchall?: ZodType;
  element?: ZodType;
  innerType?: ZodType;
  options?: readonly ZodType[];
  valueType?: ZodType;
  getter?: () => ZodType;
  left?: ZodType;
  right?: ZodType;
  in?: ZodType;
  out?: ZodType;
  items?: readonly ZodType[];
  rest?: ZodType | null;
  values?: readonly unknown[];
};

export function defOf(schema: ZodType): ZodDef {
  return (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
}

/** Schema types that only wrap one inner schema (the value is checked against `innerType`). */
const WRAPPER_TYPES = new Set(["optional", "nullable", "default", "prefault", "catch", "readonly", "nonoptional"]);

/** The inner schema of a wrapper type (optional, nullable, default…), or null for any other schema. */
export function wrappedSchema(def: ZodDef): ZodType | null {
  return WRAPPER_TYPES.has(def.type) ? (def.innerType ?? null) : null;
}
