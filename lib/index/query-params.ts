import { z } from "zod";

/** Field schemas shared by GET query strings and JSON bodies: strings are coerced, native types pass. */
export const csvParam = z.union([z.string(), z.array(z.string())]).transform((v) => (Array.isArray(v) ? v : v.split(",")).map((s) => s.trim()).filter(Boolean));

/** Tags to match (any): at most 32 distinct, each at most 64 characters. */
export const tagsParam = csvParam.transform((v) => [...new Set(v)]).pipe(z.array(z.string().max(64)).max(32));

export const boolParam = z.union([z.boolean(), z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1")]);

/** Epoch ms, an ISO date-time or an ISO date → epoch ms. */
export const dateParam = z
  .union([z.number().int().nonnegative(), z.iso.datetime({ offset: true }), z.iso.date(), z.string().regex(/^\d+$/)])
  .transform((v) => (typeof v === "number" ? v : /^\d+$/.test(v) ? Number(v) : Date.parse(v)));
