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

/**
 * `showPaths: false` (anyone but an admin) names placeholders instead of this
 * server's folders: where it is installed and keeps its data is the
 * operator's to tell, not every signed-in viewer's to read.
 */
export function mcpStdioLaunch({ installRoot, dataDir, store, nodePath, usesPostgres, showPaths = true }: { installRoot: string; dataDir: string; store: string; nodePath: string; usesPostgres: boolean; showPaths?: boolean }): McpStdioLaunch {
  if (!showPaths) return mcpStdioLaunch({ installRoot: "<dualmind folder>", dataDir: "<DATA_DIR>", store, nodePath: "node", usesPostgres });
  const env: Record<string, string> = { DATA_DIR: dataDir.startsWith("<") ? dataDir : path.resolve(dataDir) };
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
