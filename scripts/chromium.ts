import fs from "node:fs";

/**
 * The Debian Chromium binary a browser run uses. The tests prefer the headless shell, the headless browser
 * Playwright itself runs tests in (no window and no compositor of its own: about 30% less CPU over the e2e
 * suite than full Chromium in headless mode); the screenshot and icon scripts prefer full Chromium, whose
 * rendering is what a user's browser shows. Either falls back to the other.
 */
const SHELL = "/usr/lib/chromium/chromium-headless-shell";
const FULL = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"];

export function chromiumPath(prefer: "shell" | "full"): string {
  const found = (prefer === "shell" ? [SHELL, ...FULL] : [...FULL, SHELL]).find((p) => fs.existsSync(p));
  if (!found) throw new Error("Chromium not found: install Debian's chromium-headless-shell or chromium (apt-get install chromium-headless-shell), or run bash .ci/run");
  return found;
}
