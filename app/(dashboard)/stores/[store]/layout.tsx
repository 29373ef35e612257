import { notFound } from "next/navigation";
import { requireUser } from "@/app/_server/session";
import { dashboardStoreExists } from "@/lib/metrics/dashboard-views";

/**
 * An unknown store is known before the page's loading skeleton streams (this layout sits outside that
 * boundary), so it answers HTTP 404, not a 200 that draws "Not found".
 */
export default async function StoreLayout({ children, params }: { children: React.ReactNode; params: Promise<{ store: string }> }) {
  await requireUser();
  const { store } = await params;
  if (!(await dashboardStoreExists({ store }))) notFound();
  return children;
}
