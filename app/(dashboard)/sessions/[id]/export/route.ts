import { defineDashboardRoute } from "@/app/_server/dashboard-route";
import { ownedRefSchema } from "@/lib/governance/owned-ids";
import { AppError, isAppError } from "@/lib/errors";
import { governance } from "@/lib/backend/governance";

// The dashboard's download button: signed-in people only, same snapshot as the API export.
export const GET = defineDashboardRoute<{ id: string }>({
  handler: async ({ params }) => {
    const id = ownedRefSchema.safeParse(params.id);
    if (!id.success) throw new AppError("not_found", "no such session");
    const session = await governance()
      .getDialecticSession({ sessionId: id.data })
      .catch((e: unknown) => {
        // A bare id several agents chose: the review page lists each by its key (which this button links to).
        if (isAppError(e) && e.code === "conflict") return null;
        throw e;
      });
    if (!session) return new Response(null, { status: 303, headers: { location: `/sessions/${encodeURIComponent(id.data)}` } });
    const snapshot = await governance().exportDialecticSessions({ sessionId: session.key });
    return new Response(JSON.stringify(snapshot, null, 2), {
      headers: { "content-type": "application/json", "content-disposition": `attachment; filename="session-${session.key}.json"` },
    });
  },
});
