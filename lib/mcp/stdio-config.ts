import path from "node:path";

/**
 * The MCP client configuration shown to people setting up an agent: an HTTP
 * entry for this server's address and a stdio entry that launches this very
 * installation's CLI. The stdio entry names absolute paths (node, the CLI,
 * the data dir), so it works from whatever folder the client starts it in —
 * the package is private, so `npx dualmind` would fail outside the checkout
 * (or run someone else's package of that name).
 */
export type McpStdioLaunch = { command: string; args: string[]; cwd: string; env: Record<string, string> };

export function mcpStdioLaunch({ installRoot, dataDir, store, nodePath, usesPostgres }: { installRoot: string; dataDir: string; store: string; nodePath: string; usesPostgres: boolean }): McpStdioLaunch {
  const env: Record<string, string> = { DATA_DIR: path.resolve(dataDir) };
  // The connection string is a secret: the operator pastes it, the page never shows it.
  if (usesPostgres) env.DATABASE_URL = "<your DATABASE_URL>";
  return { command: nodePath, args: [path.join(installRoot, "scripts", "dualmind.mjs"), "mcp", "--store", store], cwd: installRoot, env };
}

export function mcpClientConfigText({ baseUrl, stdio }: { baseUrl: string; stdio: McpStdioLaunch }): string {
  return JSON.stringify(
    {
      mcpServers: {
        dualmind: stdio,
        "dualmind-http": { type: "http", url: `${baseUrl}/api/mcp`, headers: { Authorization: "Bearer dm_..." } },
      },
    },
    null,
    2,
  );
}
