import { notFoundResponse } from "@/lib/api/responses/common";
import { defineRoute } from "@/lib/api/route";
import { AppError } from "@/lib/errors";

// Unknown API paths answer with the envelope, not Next's HTML 404.
const notFound = defineRoute({
  name: "unknown",
  auth: "public",
  response: notFoundResponse,
  handler: ({ request }) => {
    throw new AppError("not_found", `no API route ${request.method} ${new URL(request.url).pathname}`);
  },
});

export { notFound as GET, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE };
