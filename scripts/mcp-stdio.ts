/**
 * MCP over stdio for clients that spawn servers (`npx dualmind mcp --store default`).
 * stdout carries protocol only: logs and notices go to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { actorOf } from "../lib/auth/actor";
import type { AgentPrincipal } from "../lib/auth/tokens";
import { governance } from "../lib/backend/governance";
import { bootstrapApp } from "../lib/bootstrap";
import { getConfig } from "../lib/config";
import { waitForFirstProbe } from "../lib/embed/status";
import { startEmbedWorker } from "../lib/embed/worker";
import { AppError } from "../lib/errors";
import { log } from "../lib/log";
import { createMcpServer } from "../lib/mcp/server";
import { createStore } from "../lib/stores/stores";
import { storeExists } from "../lib/db/store-names";

/**
 * The stdio principal: a token's (DUALMIND_TOKEN or --token) when given, else
 * the local operator with read + write, limited to `store` when one is named.
 * Admin tools are never offered without a token: stdio has no login.
 */
export async function stdioPrincipal({ token, store, agentId }: { token?: string; store?: string; agentId?: string }): Promise<AgentPrincipal> {
  if (token) {
    const principal = await governance().verifyApiToken({ token });
    if (!principal) throw new AppError("unauthorized", "invalid or revoked token");
    return principal;
  }
  return { tokenId: null, agentId: agentId ?? `local:${process.env.USER ?? "operator"}`, label: "stdio", scopes: ["read", "write"], stores: store ? [store] : null };
}

/** Serve until the client closes stdin. */
export async function runMcpStdio({ token, store, agentId }: { token?: string; store?: string; agentId?: string }): Promise<void> {
  // Long-lived, like the server: a store_health call waits 2 s for a slow provider's first answer, not its whole timeout.
  waitForFirstProbe("server");
  await bootstrapApp();
  if (store && !storeExists(store)) {
    // The first `mcp --store NAME` of a new install should just work; creation is audited.
    createStore({ input: { name: store }, actor: actorOf("cli") });
    log("info", "created store for mcp", { store });
  }
  const principal = await stdioPrincipal({ token, store, agentId });
  const server = createMcpServer({ principal, defaultStore: store });
  const stopWorker = new AbortController();
  // Writes are embedded in the background, as they are under `next start`.
  const worker = getConfig().embed.workerInServer ? startEmbedWorker({ signal: stopWorker.signal, mode: "in_server" }) : Promise.resolve();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.on("end", () => resolve());
  });
  await server.connect(new StdioServerTransport());
  log("info", "mcp stdio server ready", { agent: principal.agentId, store: store ?? "*" });
  await closed;
  stopWorker.abort();
  await worker;
  await server.close();
}
