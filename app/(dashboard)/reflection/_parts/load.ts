import "server-only";
import { notFound } from "next/navigation";
import { storeNameOr404 } from "../../_lib/store-or-404";

/** The store a reflection detail URL names; a malformed or unknown name is the dashboard's 404. */
export const reflectionStoreOr404 = storeNameOr404;

/** A positive integer id from the URL, or the dashboard's 404. */
export function intIdOr404(raw: string): number {
  const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id)) notFound();
  return id;
}
