/**
 * What an MCP request costs before its method runs, in process (no HTTP
 * server, no network: the route's handler called with a Web Request), one
 * run, the shapes taking turns in short slices so the shared machine's load
 * falls on each alike:
 * - tools/list through the route (handleMcpPost: bearer token, then the
 *   serialized tool list);
 * - tools/list the way every request was answered before: the same bearer
 *   check, then an MCP server and transport built for the request
 *   (createMcpServer, connect, handleRequest, close) — the code path every
 *   other method still takes;
 * - resources/templates/list through the route: a method whose handler is a
 *   constant, so its cost is that per-request server.
 *
 * BENCH_MCP_SECONDS: seconds per shape per round (default 2), BENCH_MCP_ROUNDS (default 3).
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { authenticateBearer } from "../lib/api/route";
import { createApiToken } from "../lib/auth/tokens";
import { handleMcpPost } from "../lib/mcp/http";
import { createMcpServer } from "../lib/mcp/server";
import { withBenchDataDir } from "./index.bench";
import { percentile, printTable } from "./table";

const SECONDS = Number(process.env.BENCH_MCP_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 3);

export default async function mcpSetupBench(): Promise<void> {
  await withBenchDataDir({ env: () => ({ DUALMIND_LOG_LEVEL: "error" }) }, async () => {
    const { token } = createApiToken({ input: { label: "bench", agent_id: "bench", scopes: ["read"], stores: null }, actor: "bench" });
    const request = (method: string) =>
      new Request("http://127.0.0.1/api/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method }),
      });
    /** The per-request server path, as handleMcpPost answered every method before. */
    const perRequestServer = async (req: Request) => {
      const principal = await authenticateBearer(req);
      const body = await req.json();
      const server = createMcpServer({ principal });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      try {
        return await transport.handleRequest(req, { parsedBody: body });
      } finally {
        await server.close();
      }
    };
    const shapes: { name: string; run: () => Promise<Response> }[] = [
      { name: "tools/list, route (serialized list)", run: () => handleMcpPost(request("tools/list")) },
      { name: "tools/list, per-request MCP server (before)", run: () => perRequestServer(request("tools/list")) },
      { name: "resources/templates/list, route (per-request MCP server)", run: () => handleMcpPost(request("resources/templates/list")) },
    ];
    const samples = new Map<string, number[]>(shapes.map((s) => [s.name, []]));
    const counts = new Map<string, number[]>(shapes.map((s) => [s.name, []]));
    for (const s of shapes) for (let i = 0; i < 20; i++) await (await s.run()).text();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of shapes) {
        const until = performance.now() + SECONDS * 1000;
        let n = 0;
        while (performance.now() < until) {
          const t0 = performance.now();
          const res = await s.run();
          await res.text();
          if (res.status !== 200) throw new Error(`${s.name}: ${res.status}`);
          samples.get(s.name)!.push(performance.now() - t0);
          n++;
        }
        counts.get(s.name)!.push(n / SECONDS);
      }
    }
    const base = counts.get(shapes[1].name)!;
    printTable(
      `MCP per-request setup, in process, one caller, ${ROUNDS} rounds × ${SECONDS} s per shape (req/s range over rounds)`,
      shapes.map((s) => {
        const c = counts.get(s.name)!;
        const mean = c.reduce((a, b) => a + b, 0) / c.length;
        return {
          request: s.name,
          "req/s (min–max)": `${Math.min(...c).toFixed(0)}–${Math.max(...c).toFixed(0)}`,
          "p50 ms": percentile(samples.get(s.name)!, 50),
          "p95 ms": percentile(samples.get(s.name)!, 95),
          "÷ before": `${(mean / (base.reduce((a, b) => a + b, 0) / base.length)).toFixed(2)}×`,
        };
      }),
    );
  });
}
