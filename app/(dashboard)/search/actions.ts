"use server";

import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { openIndexedStore } from "@/lib/index/reindex";
import { searchInputSchema } from "@/lib/index/search";
import { searchAnyMode, type AnySearchResult } from "@/lib/index/semantic-search";
import { storeNameSchema } from "@/lib/db/store-names";

/** Search for the dashboard; the same domain call as GET /stores/{store}/search. */
export async function searchAction(_prev: ActionResult<AnySearchResult> | null, form: FormData): Promise<ActionResult<AnySearchResult>> {
  try {
    await requireRoleForAction("viewer");
    assertForm(form);
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    const field = (name: string) => {
      const v = String(form.get(name) ?? "").trim();
      return v === "" ? undefined : v;
    };
    const input = searchInputSchema.parse({
      q: String(form.get("q") ?? ""),
      kind: field("kind"),
      prefix: field("prefix"),
      tags: field("tags"),
      mode: field("mode"),
      include_core: form.get("include_core") === "on",
      explain: form.get("explain") === "on",
      limit: 50,
    });
    openIndexedStore({ store });
    const result = await searchAnyMode({ store, input });
    return { ok: true, message: `${result.results.length}${result.hasMore ? "+" : ""} results`, data: result };
  } catch (e) {
    return actionError(e);
  }
}
