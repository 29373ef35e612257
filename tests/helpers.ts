import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { errorEnvelopeSchema } from "@/lib/api/contract";
import type { RouteDescription } from "@/lib/api/route";
import { resetConfigForTests } from "@/lib/config";
import { closeAllDatabases } from "@/lib/db/connection";
import { resetAuthSecretForTests } from "@/lib/auth/secret";
import { resetEmbedderForTests } from "@/lib/embed/model";

/**
 * Point the whole app at a fresh temp DATA_DIR (real SQLite files, real
 * sqlite-vec). Returns the directory and a cleanup function.
 */
export function useTempDataDir(extraEnv: Record<string, string> = {}): { dataDir: string; cleanup: () => void } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-test-"));
  closeAllDatabases();
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries({ DATA_DIR: dataDir, DUALMIND_ADMIN_PASSWORD: "test-admin-password", DUALMIND_LOG_LEVEL: "warn", ...extraEnv })) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  resetConfigForTests();
  resetAuthSecretForTests();
  return {
    dataDir,
    cleanup: () => {
      closeAllDatabases();
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      resetConfigForTests();
      resetAuthSecretForTests();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The contract check of the harness, independent of the wrapper's own (which
 * DUALMIND_CHECK_RESPONSES switches): every answer carries x-request-id, a
 * success matches the route's declared response schema, an error is the one
 * envelope. So every route test is a contract test.
 */
export function assertRouteContract(handler: unknown, res: Response, json: unknown): void {
  const route = (handler as { route?: RouteDescription }).route;
  if (!route) return;
  if (!res.headers.get("x-request-id")) throw new Error(`${route.name}: answer ${res.status} has no x-request-id`);
  const schema = res.ok ? route.response : errorEnvelopeSchema;
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`${route.name}: answer ${res.status} breaks its contract:\n${parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`).join("\n")}`);
}

/** Call a route handler the way Next does: a real Request and a params promise; the answer is checked against the route's contract. */
export async function callRoute(
  handler: (req: Request, ctx: { params: Promise<Record<string, string | string[] | undefined>> }) => Promise<Response>,
  opts: { method?: string; url?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; params?: Record<string, string> } = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  const req = new Request(opts.url ?? "http://127.0.0.1/api/v1/test", { method: opts.method ?? (body ? "POST" : "GET"), headers, body });
  const res = await handler(req, { params: Promise.resolve(opts.params ?? {}) });
  const text = await res.text();
  const json: unknown = text ? JSON.parse(text) : null;
  assertRouteContract(handler, res, json);
  return { status: res.status, json };
}

/**
 * Restart the app the way an operator would after changing the environment
 * (e.g. the embedding model): close connections, apply env (undefined
 * unsets), drop the cached config and embedder.
 */
export function restartWith(env: Record<string, string | undefined>): void {
  closeAllDatabases();
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetConfigForTests();
  resetEmbedderForTests();
}

/**
 * A copy (under `scratch`) of one database's migrations as a previous
 * release shipped them: the journal and files up to and including `last`.
 * For tests that build a database at the old schema and open it with this code.
 */
export function migrationsUpTo({ which, last, scratch }: { which: "index" | "governance"; last: string; scratch: string }): string {
  const folder = path.join(scratch, `${which}-migrations`);
  fs.cpSync(path.join(process.cwd(), "drizzle", which), folder, { recursive: true });
  const journalFile = path.join(folder, "meta", "_journal.json");
  const journal = JSON.parse(fs.readFileSync(journalFile, "utf8")) as { entries: { idx: number; tag: string }[] };
  const cut = journal.entries.findIndex((e) => e.tag === last);
  if (cut < 1) throw new Error(`no migration ${last} in drizzle/${which}`);
  for (const e of journal.entries.slice(cut + 1)) fs.rmSync(path.join(folder, `${e.tag}.sql`));
  journal.entries = journal.entries.slice(0, cut + 1);
  fs.writeFileSync(journalFile, JSON.stringify(journal));
  return folder;
}

/** Poll until `check` holds (a state, never a sleep as the assertion); fails with the last value seen. */
export async function until<T>(what: string, read: () => T | Promise<T>, check: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!check(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    last = await read();
  }
  return last;
}
