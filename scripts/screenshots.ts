/**
 * Screenshots of the dashboard for docs/screenshots: serves a built checkout
 * (`--app DIR`, default this one; `next build` first) on a fresh DATA_DIR with
 * the openai provider pointed at a local stand-in, seeds it through the HTTP
 * API only (so an older commit can be seeded the same way), and photographs
 * the views the dashboard notes compare, in Debian's Chromium:
 *
 *   npx tsx scripts/screenshots.ts --app /path/to/old-checkout --prefix before
 *   npx tsx scripts/screenshots.ts --prefix after
 *
 * The store holds READMEs from node_modules and a few memories; two agents
 * (critic-bot, runner-bot) write, search and validate two tasks (one with
 * both checks passing in separate validations, one still awaiting its runner
 * check). Overview is taken healthy, with the
 * provider down (the stand-in stopped), and drifted (the server restarted
 * with another model). Only the chart history is not HTTP: the checkout's own
 * `metrics demo` command writes a day of it.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Locator, type Page } from "@playwright/test";
import { startFakeOpenAI } from "../tests/fixtures/fake-openai-server";
import { freePort } from "../tests/fixtures/next-server";
import { chromiumPath } from "./chromium";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
};
const APP = path.resolve(option("app", process.cwd()));
const PREFIX = option("prefix", "after");
const OUT = path.resolve(option("out", "docs/screenshots"));
const STORE = "docs";
const TOKEN = "screenshots-bootstrap-token-0123456789abcdef";
const PASSWORD = "screenshots-admin-password";
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-shots-"));
let fakePort = 0;
let port = 0;
let base = "";

function appEnv(model: string): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    NEXTAUTH_URL: base,
    DUALMIND_ADMIN_PASSWORD: PASSWORD,
    DUALMIND_BOOTSTRAP_TOKEN: TOKEN,
    DUALMIND_EMBED_PROVIDER: "openai",
    DUALMIND_EMBED_MODEL: model,
    DUALMIND_EMBED_BASE_URL: `http://127.0.0.1:${fakePort}/v1`,
    DUALMIND_EMBED_DIM: "32",
    DUALMIND_EMBED_TIMEOUT_MS: "2000",
    DUALMIND_EVALUATE_EVERY: "off",
    DUALMIND_LOG_LEVEL: "error",
    NEXT_TELEMETRY_DISABLED: "1",
  };
}

async function startApp(model: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["node_modules/next/dist/bin/next", "start", "-H", "127.0.0.1", "-p", String(port)], {
    cwd: APP,
    detached: true,
    stdio: "ignore",
    env: { ...process.env, ...appEnv(model) },
  });
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new Error(`next start exited (${child.exitCode}) in ${APP}: is it built?`);
    const ok = await fetch(`${base}/api/v1/health`, { headers: { connection: "close" } }).then((r) => r.ok, () => false);
    if (ok) return child;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error("next start did not answer in 2 minutes");
}

async function stopApp(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.kill(-child.pid!, "SIGTERM");
  await exited;
}

async function api(method: string, route: string, body?: unknown, token = TOKEN): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/api/v1${route}`, {
    method,
    // A connection per request: an idle keep-alive socket the server closed would fail the next one.
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", connection: "close" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

/** Poll the store's health report until `done` holds (or a minute passes: the shot then shows whatever it is). */
async function waitForStatus(done: (report: { status: string; backlog?: { pending?: number } }) => boolean): Promise<string> {
  let status = "unknown";
  for (let i = 0; i < 120; i++) {
    const report = (await api("GET", `/stores/${STORE}/health`)) as { status: string; backlog?: { pending?: number } };
    status = report.status;
    if (done(report)) return status;
    await new Promise((r) => setTimeout(r, 500));
  }
  return status;
}

const sha = (n: number) => n.toString(16).padStart(64, "0");

async function seed(): Promise<void> {
  await api("POST", "/stores", { name: STORE });
  const readmes = fs
    .readdirSync(path.join(APP, "node_modules"))
    .filter((d) => !d.startsWith(".") && !d.startsWith("@") && fs.existsSync(path.join(APP, "node_modules", d, "README.md")))
    .sort()
    .slice(0, 60);
  for (let i = 0; i < readmes.length; i += 10) {
    const documents = readmes.slice(i, i + 10).map((d) => ({ path: `readmes/${d}.md`, content: fs.readFileSync(path.join(APP, "node_modules", d, "README.md"), "utf8").slice(0, 20_000) }));
    await api("PUT", `/stores/${STORE}/documents`, { documents });
  }
  const agents: Record<string, string> = {};
  for (const agent of ["critic-bot", "runner-bot"]) {
    agents[agent] = (await api("POST", "/tokens", { label: agent, agent_id: agent, scopes: ["read", "write"], stores: [STORE] })).token as string;
  }
  const memories = [
    ["decisions/release-train", "# Release train\n\nWe ship every second Tuesday; a red nightly holds the train.", "critic-bot"],
    ["decisions/storage", "# Storage choice\n\nSQLite per store, PostgreSQL when several replicas serve.", "runner-bot"],
    ["people/on-call", "# On-call rota\n\nThe runner pages whoever owns the failing check.", "runner-bot"],
    ["howto/reindex", "# Reindexing a store\n\nAsk for a reindex from the store page; the old index serves until the new one is ready.", "critic-bot"],
  ];
  for (const [p, body, agent] of memories) await api("POST", `/stores/${STORE}/memories`, { path: p, body, tags: ["team"] }, agents[agent]);
  for (const [agent, q] of [["critic-bot", "release train"], ["runner-bot", "reindex"], ["critic-bot", "typescript"]]) await api("POST", `/stores/${STORE}/search`, { q }, agents[agent]);
  const task = (await api("POST", "/tasks", { intent: "Nightly build of the docs store", spec: { store: STORE }, required_checks: ["critic", "runner"], assignees: ["critic-bot", "runner-bot"] })) as { task: { task_id: string } };
  const run = (await api("POST", `/tasks/${task.task.task_id}/runs`, { skill: "build-docs", input_hash: sha(1), runner_version: "1.0.0", output_hash: sha(2), exit_code: 0 }, agents["runner-bot"])) as { run: { run_id: string } };
  await api("POST", `/tasks/${task.task.task_id}/validations`, { run_id: run.run.run_id, critic_passed: true, runner_passed: null, details: { note: "reviewed the diff" } }, agents["critic-bot"]);
  await api("POST", `/tasks/${task.task.task_id}/validations`, { run_id: run.run.run_id, critic_passed: null, runner_passed: true, details: { note: "tests green" } }, agents["runner-bot"]);
  // A second task whose runner check has not come in yet: awaiting, not failed.
  const waiting = (await api("POST", "/tasks", { intent: "Weekly re-embed of the docs store", spec: { store: STORE }, required_checks: ["critic", "runner"], assignees: ["critic-bot", "runner-bot"] })) as { task: { task_id: string } };
  const started = (await api("POST", `/tasks/${waiting.task.task_id}/runs`, { skill: "reembed", input_hash: sha(3), runner_version: "1.0.0", output_hash: sha(4), exit_code: 0 }, agents["runner-bot"])) as { run: { run_id: string } };
  await api("POST", `/tasks/${waiting.task.task_id}/validations`, { run_id: started.run.run_id, critic_passed: true, runner_passed: null }, agents["critic-bot"]);
  // A day of chart history, written by the checkout's own CLI.
  const demo = spawnSync(process.execPath, ["node_modules/tsx/dist/cli.mjs", "scripts/cli.ts", "metrics", "demo", STORE, "--hours", "24"], { cwd: APP, env: { ...process.env, ...appEnv("fake-a") }, stdio: "pipe" });
  if (demo.status !== 0) throw new Error(`metrics demo: ${demo.stderr.toString()}`);
}

async function shoot(page: Page, name: string, target?: Locator): Promise<void> {
  const file = path.join(OUT, `${PREFIX}-${name}.png`);
  if (target) {
    // The element, cut at a screen's height: what a reader sees first.
    const box = (await target.boundingBox())!;
    const scrollY = await page.evaluate(() => window.scrollY);
    await page.screenshot({ path: file, fullPage: true, clip: { x: box.x, y: box.y + scrollY, width: box.width, height: Math.min(box.height, DESKTOP.height) } });
  } else await page.screenshot({ path: file });
  console.log(`${file} (${Math.round(fs.statSync(file).size / 1024)} KB)`);
}

async function signIn(page: Page): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel("Username").fill("admin");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/login"));
}

async function main(): Promise<void> {
  fakePort = await freePort();
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const executablePath = chromiumPath("full");
  fs.mkdirSync(OUT, { recursive: true });
  const fake = await startFakeOpenAI({ dimension: 32, port: fakePort });
  let app = await startApp("fake-a");
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    await seed();
    console.log(`healthy: ${await waitForStatus((r) => r.status === "healthy" && (r.backlog?.pending ?? 0) === 0)}`);
    const page = await browser.newPage({ viewport: DESKTOP });
    await signIn(page);

    await page.goto(`${base}/`);
    await shoot(page, "item1-overview-healthy");
    await page.goto(`${base}/ledger`);
    await shoot(page, "item2-ledger");
    if (fs.existsSync(path.join(APP, "app/(dashboard)/activity/page.tsx"))) {
      await page.goto(`${base}/activity?agent=critic-bot`);
      await shoot(page, "item3-activity");
    } else {
      await page.goto(`${base}/admin`);
      await shoot(page, "item3-activity", page.locator("section", { has: page.getByRole("heading", { name: /Audit log/ }) }).first());
    }
    await page.goto(`${base}/api-docs`);
    await shoot(page, "item4-mcp-setup", page.locator("section", { has: page.getByRole("heading", { name: /MCP/ }) }).first());

    await page.setViewportSize(PHONE);
    await page.goto(`${base}/health?store=${STORE}`);
    await page.locator("figure").first().scrollIntoViewIfNeeded();
    await shoot(page, "item5-phone-chart");
    await page.goto(`${base}/observability`);
    await page.locator("table").first().scrollIntoViewIfNeeded();
    await shoot(page, "item5-phone-table");
    await page.setViewportSize(DESKTOP);

    // The provider goes down: an agent's vector search finds out.
    await fake.close();
    await fetch(`${base}/api/v1/stores/${STORE}/search`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", connection: "close" }, body: JSON.stringify({ q: "release", mode: "vector" }) });
    await api("PUT", `/stores/${STORE}/documents`, { documents: [{ path: "notes/while-down.md", content: "# Written while the provider was down\n\nIt waits in the backlog." }] });
    console.log(`provider down: ${await waitForStatus((r) => r.status === "provider_down")}`);
    await page.goto(`${base}/`);
    await shoot(page, "item1-overview-provider-down");

    // Drift: the provider is back, and the server restarts with another model.
    const back = await startFakeOpenAI({ dimension: 32, port: fakePort });
    await stopApp(app);
    app = await startApp("fake-b");
    console.log(`drift: ${await waitForStatus((r) => r.status === "drifted")}`);
    await signIn(page);
    await page.goto(`${base}/`);
    await shoot(page, "item1-overview-drift");
    await back.close();
  } finally {
    await browser.close();
    await stopApp(app);
    await fake.close().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
