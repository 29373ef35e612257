/**
 * Building blocks of the response schemas. Every schema here describes the
 * wire (snake_case, after JSON) rather than a domain type: see ../contract.ts.
 *
 * Objects are exact (`exact` = z.strictObject): an undeclared field fails the
 * contract check in tests. Free-form values stay free-form (`freeForm`).
 */
import { z } from "zod";
import { poisonFlagsSchema } from "../../poison";
import { contradictionFlagSchema } from "../../index/facts";

export const exact = z.strictObject;

/** A JSON object whose keys are data, not fields: node attributes, frame properties, learning args. */
export const freeForm = z.record(z.string(), z.unknown());

/** Epoch milliseconds (file modification times may carry a fraction). */
export const epochMs = z.number();
export const count = z.number().int().min(0);

/** DELETE of an item addressed by id, key or path: what was deleted. */
/**
 * Poisoning flags (lib/poison.ts): what the item's shown text carries that may be aimed at a later reader —
 * instructions, credentials or links to run — each with its rule, reason, field, span and a masked excerpt.
 * Computed from the stored text when the answer is made; empty when clean. A warning, not a block. Beside them, a
 * fact's unresolved contradiction (lib/index/facts.ts): flag `contradiction`, with the other item's id.
 */
export const flags = z.array(z.union([poisonFlagsSchema.element, contradictionFlagSchema]));

export const deletedResponse = exact({ deleted: z.string() });

/** Unknown API paths never succeed: they answer 404 with the error envelope. */
export const notFoundResponse = z.never();

/** `GET /openapi.json`: an OpenAPI 3.1 document (its paths and components are the document's own JSON). */
export const openApiDocumentResponse = exact({
  openapi: z.literal("3.1.0"),
  info: exact({ title: z.string(), version: z.string(), description: z.string() }),
  servers: z.array(exact({ url: z.string() })),
  security: z.array(freeForm),
  components: freeForm,
  paths: z.record(z.string(), freeForm),
});
