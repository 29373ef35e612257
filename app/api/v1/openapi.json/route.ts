import { buildOpenApiDocument } from "@/lib/api/openapi";
import { openApiDocumentResponse } from "@/lib/api/responses/common";
import { defineRoute } from "@/lib/api/route";
import { ROUTE_MODULES } from "./catalog";

export const dynamic = "force-dynamic";

export const GET = defineRoute({
  name: "GET /openapi.json",
  auth: "public",
  response: openApiDocumentResponse,
  description: "This OpenAPI 3.1 document, generated from the routes' zod schemas",
  handler: () => buildOpenApiDocument(Object.values(ROUTE_MODULES)),
});
