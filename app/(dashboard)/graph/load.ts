import "server-only";
import { storeNameOr404 } from "../_lib/store-or-404";

/** The store a graph page is about, or the 404 page (never creates a store). */
export async function graphStoreOr404(raw: string): Promise<string> {
  return storeNameOr404(raw);
}
