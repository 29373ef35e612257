"use server";

import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { searchInputSchema, searchStore, type SearchResult } from "@/lib/index/search";
import { storeNameSchema } from "@/lib/db/store-names";
import { openCoreFor, openStore } from "@/lib/stores/stores";

/** Search for the dashboard; the same domain call as GET /stores/{store}/search. */
export async function searchAction(_prev: ActionResult<SearchResult> | null, form: FormData): Promise<ActionResult<SearchResult>> {
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
    const handle = openStore({ store });
    const result = await searchStore({ handle, core: openCoreFor({ handle, includeCore: input.include_core }), input });
    return { ok: true, message: `${result.results.length}${result.hasMore ? "+" : ""} results`, data: result };
  } catch (e) {
    return actionError(e);
  }
}
