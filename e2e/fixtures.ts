import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, type Browser, type Page } from "@playwright/test";

// One temp dir per run (made where playwright.config.ts loads this first), shared with the workers through the environment.
process.env.E2E_DATA_DIR ??= fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-e2e-"));

/** How many Playwright workers run the specs; each has its own e2e server (playwright.config.ts). */
export const E2E_WORKERS = 2;

/**
 * Worker `slot`'s e2e server: its port and its DATA_DIR, a directory of the run's E2E_DATA_DIR (a throwaway
 * temp dir). The specs of one worker share one server, one spec at a time;
 * the two workers' servers share nothing, so no spec sees the stores or counts of a spec running beside it.
 */
export function e2eServer(slot: number): { port: number; baseURL: string; dataDir: string } {
  const port = Number(process.env.E2E_PORT ?? 3107) + slot;
  return { port, baseURL: `http://127.0.0.1:${port}`, dataDir: path.join(process.env.E2E_DATA_DIR!, `server-${slot}`) };
}

/** This worker's server (Playwright numbers its running workers 0, 1, …) and the fixed credentials of every e2e server. */
export const E2E = {
  ...e2eServer(Number(process.env.TEST_PARALLEL_INDEX ?? 0)),
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

/** Once the page's own content has streamed in (no loading state left in main): what a person sees before acting on it. */
export async function pageShown(page: Page): Promise<void> {
  await expect(page.locator('#main-content [aria-busy="true"]')).toHaveCount(0);
}

export function bootstrapHeaders(): Record<string, string> {
  return { authorization: `Bearer ${E2E.bootstrapToken}` };
}

/** One signed-in person per role besides the admin, made on the Admin page by ensureRoleUsers (once per run). */
export const ROLE_USERS = {
  editor: { username: "role-editor", password: "role-editor-password" },
  viewer: { username: "role-viewer", password: "role-viewer-password" },
} as const;

/** Create the ROLE_USERS through the Admin page as the admin would; a user that already exists is kept as it is. */
export async function ensureRoleUsers(browser: Browser): Promise<void> {
  const page = await browser.newPage({ baseURL: E2E.baseURL });
  await signIn(page, "admin", E2E.adminPassword);
  await page.goto("/admin");
  const form = page.getByRole("form", { name: "Create user" });
  for (const [role, { username, password }] of Object.entries(ROLE_USERS)) {
    await form.getByLabel("New username").fill(username);
    await form.getByLabel("New user password").fill(password);
    await form.getByLabel("Role").selectOption(role);
    await form.getByRole("button", { name: "Create user" }).click();
    await expect(form.getByRole("status").or(form.getByRole("alert"))).toContainText(new RegExp(`Created ${role} ${username}|user ${username} already exists`));
  }
  await page.close();
}

/** The e2e seed's editor (issue 18's role between viewer and admin). */
export const EDITOR = { username: "eddie", password: "eddie-editor-password" };

/**
 * Make sure the seed's editor exists: an admin creates it on the Admin page
 * (any spec may ask first; a second call finds it already there). `admin` is
 * a page signed in as admin.
 */
export async function ensureEditor(admin: Page): Promise<void> {
  await admin.goto("/admin");
  const form = admin.getByRole("form", { name: "Create user" });
  await form.getByLabel("New username").fill(EDITOR.username);
  await form.getByLabel("New user password").fill(EDITOR.password);
  await form.getByLabel("Role").selectOption("editor");
  await form.getByRole("button", { name: "Create user" }).click();
  await expect(form.getByRole("status").or(form.getByRole("alert"))).toContainText(new RegExp(`Created editor ${EDITOR.username}|user ${EDITOR.username} already exists`));
}

/** Screenshots are taken only when asked for (E2E_SCREENSHOTS=1), into SCREENSHOT_DIR: ignored by git, replaced by each run that takes them. */
export const TAKE_SCREENSHOTS = process.env.E2E_SCREENSHOTS === "1";
export const SCREENSHOT_DIR = path.join("e2e", "screenshots");

/**
 * A full-page screenshot for a person to look at, at SCREENSHOT_DIR/`name`, only with TAKE_SCREENSHOTS:
 * no assertion reads them, and encoding a PNG costs the browser more than most checks do.
 */
export async function screenshot(page: Page, name: string, options: { clip?: { x: number; y: number; width: number; height: number } } = {}): Promise<void> {
  if (!TAKE_SCREENSHOTS) return;
  const file = path.join(SCREENSHOT_DIR, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true, ...options });
}

/** Seed a day of demo metrics into the server's DATA_DIR the way an operator would: the CLI. */
export function seedDemoMetrics(stores: string[]): void {
  execFileSync(process.execPath, ["scripts/dualmind.mjs", "metrics", "demo", ...stores, "--hours", "24"], {
    env: { ...process.env, DATA_DIR: E2E.dataDir, DUALMIND_LOG_LEVEL: "warn" },
    stdio: "pipe",
  });
}

const AXE_SCRIPT = require.resolve("axe-core/axe.min.js");

type Violation = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };

/** The page's serious and critical accessibility violations (axe-core, the engine behind Lighthouse's audits). */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  await page.addScriptTag({ path: AXE_SCRIPT });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: Violation[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}
