"use client";

import { usePathname, useSearchParams } from "next/navigation";
import { useEffect } from "react";
import { LAST_STORE_COOKIE, LAST_STORE_MAX_AGE_S, storeNamedBy } from "@/lib/http/last-store";

/**
 * Keeps the store a page names as this browser's last store after a
 * client-side navigation (proxy.ts does it for full page loads): it runs only
 * for the page shown, never for the router's prefetches.
 */
export function RememberStore() {
  const pathname = usePathname();
  const search = useSearchParams().toString();
  useEffect(() => {
    const store = storeNamedBy(new URL(`${pathname}${search ? `?${search}` : ""}`, window.location.origin));
    if (!store) return;
    const remember = () => {
      const current = document.cookie.split("; ").find((c) => c.startsWith(`${LAST_STORE_COOKIE}=`))?.slice(LAST_STORE_COOKIE.length + 1);
      if (current === store) return;
      const secure = window.location.protocol === "https:" ? "; secure" : "";
      document.cookie = `${LAST_STORE_COOKIE}=${store}; path=/; max-age=${LAST_STORE_MAX_AGE_S}; samesite=lax${secure}`;
    };
    // A page the browser prerenders (its own guess at the next page) is not seen yet: remembered once it is shown.
    const doc = document as Document & { prerendering?: boolean };
    if (!doc.prerendering) return remember();
    document.addEventListener("prerenderingchange", remember, { once: true });
    return () => document.removeEventListener("prerenderingchange", remember);
  }, [pathname, search]);
  return null;
}
