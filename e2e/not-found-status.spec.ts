import { expect, test } from "@playwright/test";
import { E2E, signIn } from "./fixtures";

/**
 * An address that names nothing answers HTTP 404 (not a 200 that draws "Not found"), for a signed-in
 * person, on every kind of page that takes an id or a store — also where the page has a loading
 * skeleton that streams before the page is ready.
 */
const UNKNOWN = [
  "/stores/no-such-store",
  "/sessions/no-such-session",
  "/ledger/tasks/no-such-task",
  "/graph/no-such-store",
  "/graph/no-such-store/thoughts",
  "/reflection/no-such-store/traces/1",
  "/search/read/no-such-store/0123456789abcdef0123456789abcdef",
  "/no/such/page",
];

test("unknown ids, stores and paths answer 404 with the Not found page", async ({ page }) => {
  await signIn(page, "admin", E2E.adminPassword);
  const wrong: string[] = [];
  for (const url of UNKNOWN) {
    const res = await page.request.get(url, { maxRedirects: 0 });
    const body = await res.text();
    if (res.status() !== 404) wrong.push(`${url}: HTTP ${res.status()}`);
    else if (!body.includes("Not found")) wrong.push(`${url}: 404 without the Not found page`);
  }
  expect(wrong).toEqual([]);
});
