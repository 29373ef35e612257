"use server";

import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { graphBackend } from "@/lib/graph/backend";
import type { FlaggedRememberResponse } from "@/lib/graph/backend";
import { storeNameSchema } from "@/lib/db/store-names";

// Server actions are public endpoints: this one re-checks the session itself. It only reads, so there is nothing to audit.
export async function rememberAction(_prev: ActionResult<FlaggedRememberResponse> | null, form: FormData): Promise<ActionResult<FlaggedRememberResponse>> {
  try {
    await requireRoleForAction("viewer");
    assertForm(form);
    const store = storeNameSchema.parse(form.get("store"));
    const includeCore = form.get("include_core") === "on";
    const data = await graphBackend().remember({ store, input: { query: String(form.get("query") ?? ""), include_core: includeCore } });
    return { ok: true, message: `${data.results.length} result${data.results.length === 1 ? "" : "s"}`, data };
  } catch (e) {
    return actionError({ error: e });
  }
}
