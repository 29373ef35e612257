import type { ZodType } from "zod";

/** The parts of a zod 4 schema definition that the schema walkers (store references, wire casing) read. */
export type ZodDef = {
  type: string;
  shape?: Record<string, ZodType>;
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
