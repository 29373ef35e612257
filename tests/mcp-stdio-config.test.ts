import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { mcpClientConfigText, mcpStdioLaunch } from "@/lib/mcp/stdio-config";
import { patience } from "./fixtures/patience";

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dm-mcp-snippet-"));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe("the API page's stdio MCP snippet", () => {
  it("names absolute paths and no package to fetch, and hides the PostgreSQL connection string", () => {
    const stdio = mcpStdioLaunch({ installRoot: "/srv/dualmind", dataDir: "data", store: "default", nodePath: "/usr/bin/node", usesPostgres: true });
    expect(stdio.command).toBe("/usr/bin/node");
    expect(stdio.args[0]).toBe("/srv/dualmind/scripts/dualmind.mjs");
    expect(path.isAbsolute(stdio.env.DATA_DIR)).toBe(true);
    expect(stdio.env.DATABASE_URL).toBe("<your DATABASE_URL>");
    const text = mcpClientConfigText({ baseUrl: "http://127.0.0.1:3000", stdio });
    expect(text).not.toContain("npx");
    expect(JSON.parse(text).mcpServers["dualmind-http"].url).toBe("http://127.0.0.1:3000/api/mcp");
  });

  it("works when a client launches it from another folder with only the environment it names", async () => {
    const dataDir = path.join(scratch, "data");
    const elsewhere = path.join(scratch, "some-other-project");
    fs.mkdirSync(elsewhere, { recursive: true });
    const stdio = mcpStdioLaunch({ installRoot: process.cwd(), dataDir, store: "default", nodePath: process.execPath, usesPostgres: false });
    // A client runs the command in its own folder; the SDK adds only HOME, PATH and the like to the entry's env.
    const transport = new StdioClientTransport({ command: stdio.command, args: stdio.args, env: stdio.env, cwd: elsewhere, stderr: "pipe" });
    const client = new Client({ name: "snippet-test", version: "1.0.0" });
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("write_memory");
    const written = (await client.callTool({ name: "write_memory", arguments: { path: "setup/snippet", body: "launched from another folder" } })) as CallToolResult;
    expect(written.isError).toBeFalsy();
    await client.close();
    // The memory landed in the data dir the snippet names, not in the client's folder.
    expect(fs.readFileSync(path.join(dataDir, "stores", "default", "memory", "setup", "snippet.md"), "utf8")).toContain("launched from another folder");
    expect(fs.existsSync(path.join(elsewhere, "data"))).toBe(false);
  }, patience(90_000));
});
