import { defineDashboardRoute } from "@/app/_server/dashboard-route";
import { ownedRefSchema } from "@/lib/governance/owned-ids";
import { AppError } from "@/lib/errors";
import { governance } from "@/lib/backend/governance";

// The dashboard's download button: signed-in people only, same snapshot as the API export.
export const GET = defineDashboardRoute<{ id: string }>({
  handler: async ({ params }) => {
    const id = ownedRefSchema.safeParse(params.id);
    if (!id.success) throw new AppError("not_found", "no such session");
    const { key } = await governance().getDialecticSession({ sessionId: id.data });
    const snapshot = await governance().exportDialecticSessions({ sessionId: key });
    return new Response(JSON.stringify(snapshot, null, 2), {
      headers: { "content-type": "application/json", "content-disposition": `attachment; filename="session-${key}.json"` },
    });
  },
});
