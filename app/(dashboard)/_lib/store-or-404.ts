import "server-only";
import { notFound } from "next/navigation";
import { storeNameSchema } from "@/lib/db/store-names";
import { stores } from "@/lib/stores/backend";

/**
 * The store a dashboard URL names, when this process's backend has it (PostgreSQL with DATABASE_URL,
 * never DATA_DIR's local stores then); a malformed or unknown name is the dashboard's 404. Never creates a store.
 */
export async function storeNameOr404(raw: string): Promise<string> {
  // No decoding: a valid store name has nothing to decode, and a stray "%" must be a 404, not a URIError.
  const name = storeNameSchema.safeParse(raw);
  if (!name.success || !(await stores().listStoreNames()).includes(name.data)) notFound();
  return name.data;
}
