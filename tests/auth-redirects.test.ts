import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getAuthOptions } from "@/lib/backend/auth-options";
import { sameOriginPath, sameOriginUrl } from "@/lib/auth/redirects";
import { hostileCallbackUrls } from "./fixtures/hostile-callback-urls";
import { useTempDataDir } from "./helpers";

const BASE = "http://127.0.0.1:3000";

/** What a browser does with a redirect target: resolve it against the page it is on. */
function landsOn(target: string): URL {
  return new URL(target, `${BASE}/login`);
}

function staysHome(target: string): boolean {
  const url = landsOn(target);
  // Same origin, and a path that a later relative resolution cannot read as a host either.
  return url.origin === BASE && !/^[/\\]{2}/.test(url.pathname);
}

describe("callbackUrl after sign-in", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir({ NEXTAUTH_URL: BASE });
  });
  afterEach(() => env.cleanup());

  it.each(hostileCallbackUrls("127.0.0.1:3000"))("%j never leaves the origin (login page and next-auth's redirect callback)", async (hostile) => {
    const path = sameOriginPath({ callbackUrl: hostile, baseUrl: BASE });
    expect(path.startsWith("/") && !path.startsWith("//"), path).toBe(true);
    expect(staysHome(path), path).toBe(true);
    const redirect = await getAuthOptions().callbacks!.redirect!({ url: hostile, baseUrl: BASE });
    expect(staysHome(redirect), redirect).toBe(true);
    expect(redirect.startsWith(`${BASE}/`), redirect).toBe(true);
  });

  it("same-origin paths and URLs are kept as they were meant", async () => {
    const kept: [string, string][] = [
      ["/", "/"],
      ["/stores/default?tab=health#top", "/stores/default?tab=health#top"],
      ["/search?q=a%2Fb", "/search?q=a%2Fb"],
      [`${BASE}/ledger`, "/ledger"],
      ["admin", "/admin"],
      ["", "/"],
    ];
    for (const [given, path] of kept) {
      expect(sameOriginPath({ callbackUrl: given, baseUrl: BASE })).toBe(path);
      expect(await getAuthOptions().callbacks!.redirect!({ url: given, baseUrl: BASE })).toBe(`${BASE}${path}`);
    }
    expect(sameOriginPath({ callbackUrl: null, baseUrl: BASE })).toBe("/");
    expect(sameOriginUrl({ callbackUrl: "/x", baseUrl: `${BASE}/some/base/path` })).toBe(`${BASE}/x`);
  });
});
