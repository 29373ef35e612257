/**
 * The agent surfaces side by side on one store: the same full-text searches
 * through the domain function, the REST route handler, the typed client over
 * real HTTP, MCP over Streamable HTTP and MCP over stdio (both with the SDK's
 * own client). Then online backup and bundle export/import times, with and
 * without a concurrent writer.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { GET as mcpGet, POST as mcpPost } from "../app/api/mcp/route";
import { POST as searchPost } from "../app/api/v1/stores/[store]/search/route";
import { backupDataDir, exportStoreBundle, importStoreBundle } from "../lib/backup/backup";
import { createApiToken } from "../lib/auth/tokens";
import { bootstrapApp } from "../lib/bootstrap";
import { DualmindClient } from "../lib/client";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { drainEmbedQueues } from "../lib/embed/worker";
import { createMemory } from "../lib/index/memories";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { createStore, openStore } from "../lib/stores/stores";
import { loadTextWindows } from "./corpus";
import { percentile, printTable } from "./table";

const MEMORIES = 2_000;
const QUERIES = 200;

type Handler = (req: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;

function serve(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const hasBody = req.method === "POST";
    const request = new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined, duplex: "half" } as RequestInit);
    const search = /^\/api\/v1\/stores\/([^/]+)\/search$/.exec(new URL(request.url).pathname);
    const response = !hasBody ? mcpGet() : search ? await (searchPost as Handler)(request, { params: Promise.resolve({ store: search[1] }) }) : await mcpPost(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) })),
  );
}

async function timeEach(queries: string[], run: (q: string) => Promise<unknown>): Promise<Record<string, number>> {
  const samples: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    await run(q);
    samples.push(performance.now() - t);
  }
  return { "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95), "mean ms": samples.reduce((a, b) => a + b, 0) / samples.length };
}

export default async function agentsBench(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-agents-"));
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-agents-out-"));
  const saved = { DATA_DIR: process.env.DATA_DIR, LOG: process.env.DUALMIND_LOG_LEVEL };
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  process.env.DUALMIND_ADMIN_PASSWORD ??= "bench-admin-password";
  resetConfigForTests();
  closeAllDatabases();
  try {
    await bootstrapApp();
    createStore({ input: { name: "bench" }, actor: "bench" });
    const handle = openStore({ store: "bench" });
    const texts = loadTextWindows(MEMORIES);
    texts.forEach((body, i) => createMemory({ handle, input: { path: `corpus/m-${i}`, body }, actor: "bench" }));
    await drainEmbedQueues({ stores: ["bench"] });
    const queries = Array.from({ length: QUERIES }, (_, i) => texts[(i * 7919) % texts.length].split(/\s+/).filter((w) => /^[a-z]{4,}$/i.test(w)).slice(0, 2).join(" ") || "the");
    const token = createApiToken({ input: { label: "bench", agent_id: "bench", scopes: ["write"] }, actor: "bench" }).token;
    const server = await serve();

    const rows: Record<string, string | number>[] = [];
    rows.push({ surface: "domain function (searchStore)", ...(await timeEach(queries, (q) => searchStore({ handle, core: null, input: searchInputSchema.parse({ q, mode: "fts" }) }))) });
    rows.push({
      surface: "REST route handler, in process",
      ...(await timeEach(queries, (q) =>
        (searchPost as Handler)(new Request("http://x/api/v1/stores/bench/search", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ q, mode: "fts" }) }), { params: Promise.resolve({ store: "bench" }) }),
      )),
    });
    const client = new DualmindClient({ baseUrl: server.url, token });
    rows.push({ surface: "typed client over HTTP", ...(await timeEach(queries, (q) => client.search("bench", { q, mode: "fts" }))) });
    const mcpHttp = new Client({ name: "bench", version: "1" });
    await mcpHttp.connect(new StreamableHTTPClientTransport(new URL("/api/mcp", server.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    rows.push({ surface: "MCP tool, Streamable HTTP (SDK client)", ...(await timeEach(queries, (q) => mcpHttp.callTool({ name: "search", arguments: { store: "bench", q, mode: "fts" } }))) });
    await mcpHttp.close();
    const mcpStdio = new Client({ name: "bench", version: "1" });
    await mcpStdio.connect(
      new StdioClientTransport({ command: process.execPath, args: [path.join(process.cwd(), "scripts", "dualmind.mjs"), "mcp", "--store", "bench"], env: { ...(process.env as Record<string, string>) }, stderr: "ignore" }),
    );
    rows.push({ surface: "MCP tool, stdio (SDK client, spawned CLI)", ...(await timeEach(queries, (q) => mcpStdio.callTool({ name: "search", arguments: { q, mode: "fts" } }))) });
    await mcpStdio.close();
    await server.close();
    printTable(`Full-text search, same ${QUERIES} two-word queries over ${MEMORIES} memories, by surface`, rows);

    const indexMb = fs.statSync(getStoreDb({ store: "bench" }).file).size / 1e6;
    const backupRows: Record<string, string | number>[] = [];
    let t = performance.now();
    await backupDataDir({ outDir: path.join(scratch, "idle"), actor: "bench" });
    backupRows.push({ operation: "backup (all DBs + memory files), idle", "index.db MB": indexMb, ms: performance.now() - t });

    const stop = path.join(scratch, "stop");
    const ready = path.join(scratch, "ready");
    const writer = spawn(path.join(process.cwd(), "node_modules", ".bin", "tsx"), [path.join(process.cwd(), "tests", "fixtures", "agents-write-load.ts")], {
      env: { ...process.env, STORE: "bench", STOP_FILE: stop, READY_FILE: ready },
      stdio: ["ignore", "pipe", "ignore"],
    });
    let out = "";
    writer.stdout.on("data", (d) => (out += d));
    const exited = new Promise((r) => writer.on("close", r));
    while (!fs.existsSync(ready)) await new Promise((r) => setTimeout(r, 20));
    t = performance.now();
    await backupDataDir({ outDir: path.join(scratch, "loaded"), actor: "bench" });
    const loadedMs = performance.now() - t;
    fs.writeFileSync(stop, "stop");
    await exited;
    const wrote = JSON.parse(out.trim() || "{}") as { memories?: number };
    backupRows.push({ operation: `backup while another process writes (${wrote.memories ?? "?"} memories + thoughts written)`, "index.db MB": indexMb, ms: loadedMs });

    t = performance.now();
    await exportStoreBundle({ handle: openStore({ store: "bench" }), outDir: path.join(scratch, "bundle") });
    backupRows.push({ operation: "export bundle", "index.db MB": indexMb, ms: performance.now() - t });
    t = performance.now();
    await importStoreBundle({ bundleDir: path.join(scratch, "bundle"), as: "bench-kept", reembed: false, actor: "bench" });
    backupRows.push({ operation: "import bundle, keep vectors", "index.db MB": indexMb, ms: performance.now() - t });
    printTable("Backup and bundles", backupRows);
  } finally {
    closeAllDatabases();
    if (saved.DATA_DIR === undefined) delete process.env.DATA_DIR;
    else process.env.DATA_DIR = saved.DATA_DIR;
    if (saved.LOG === undefined) delete process.env.DUALMIND_LOG_LEVEL;
    else process.env.DUALMIND_LOG_LEVEL = saved.LOG;
    resetConfigForTests();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
