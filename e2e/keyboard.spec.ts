import { expect, test } from "@playwright/test";
import { E2E, pageShown, signIn } from "./fixtures";

test("a keyboard user skips the navigation with the first Tab, and a focused input shows a focus ring", async ({ page }) => {
  await signIn(page, "admin", E2E.adminPassword);
  await page.goto("/search");
  // The page streams in after its loading state: a person tabs once it is there (a skeleton has nothing to land on).
  await pageShown(page);
  const input = page.locator("#main-content input.input").first();
  await input.waitFor();
  await page.keyboard.press("Tab");
  const skip = page.getByRole("link", { name: "Skip to content" });
  await expect(skip).toBeFocused();
  await expect(skip).toBeVisible();
  await page.keyboard.press("Enter");
  await expect(page.locator("#main-content")).toBeFocused();
  // The next Tab lands inside the page, not back in the navigation.
  await page.keyboard.press("Tab");
  const inMain = await page.evaluate(() => document.getElementById("main-content")?.contains(document.activeElement) ?? false);
  expect(inMain).toBe(true);

  await input.focus();
  await page.keyboard.press("Shift+Tab");
  await page.keyboard.press("Tab");
  const ring = await input.evaluate((el) => getComputedStyle(el).boxShadow);
  expect(ring).not.toBe("none");
});
