"use server";

import { actionError, type ActionResult } from "@/app/_server/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { openIndexedStore } from "@/lib/index/reindex";
import { searchInputSchema, searchStore, type SearchResult } from "@/lib/index/search";
import { storeNameSchema } from "@/lib/stores/stores";

/** Full-text search for the dashboard; the same domain call as GET /stores/{store}/search. */
export async function searchAction(_prev: ActionResult<SearchResult> | null, form: FormData): Promise<ActionResult<SearchResult>> {
  try {
    await requireRoleForAction("viewer");
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
      include_core: form.get("include_core") === "on",
      limit: 50,
    });
    openIndexedStore({ store });
    const result = searchStore({ store, input });
    return { ok: true, message: `${result.results.length}${result.hasMore ? "+" : ""} results`, data: result };
  } catch (e) {
    return actionError(e);
  }
}
