import { getSessionUser } from "@/app/_server/session";
import { AppError, isAppError } from "@/lib/errors";
import { exportDialecticSessions } from "@/lib/governance/dialectic-export";
import { clientIdSchema } from "@/lib/common";

// The dashboard's download button: signed-in people only, same snapshot as the API export.
export async function GET(_request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  try {
    if (!(await getSessionUser())) throw new AppError("unauthorized", "sign in first");
    const id = clientIdSchema.safeParse((await params).id);
    if (!id.success) throw new AppError("not_found", "no such session");
    const snapshot = exportDialecticSessions({ sessionId: id.data });
    return new Response(JSON.stringify(snapshot, null, 2), {
      headers: { "content-type": "application/json", "content-disposition": `attachment; filename="session-${id.data}.json"` },
    });
  } catch (e) {
    if (isAppError(e)) return Response.json(e.toBody(), { status: e.status });
    throw e;
  }
}
