import type { Page } from "@playwright/test";

/** Fixed credentials for the e2e server (a throwaway temp DATA_DIR per run). */
const port = Number(process.env.E2E_PORT ?? 3107);

export const E2E = {
  port,
  baseURL: `http://127.0.0.1:${port}`,
  adminPassword: "e2e-admin-password",
  bootstrapToken: "e2e-bootstrap-token-0123456789abcdef-XYZ",
};

export async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.goto("/login");
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("current-user").waitFor();
}

export function bootstrapHeaders(): Record<string, string> {
  return { authorization: `Bearer ${E2E.bootstrapToken}` };
}
