import { describe, expect, it } from "vitest";
import { mcpClientConfigText, mcpStdioLaunch } from "@/lib/mcp/stdio-config";

/** The API docs page's MCP snippet: this server's folders are for admins; a viewer gets placeholders. */
describe("the MCP stdio snippet", () => {
  const server = { installRoot: "/srv/secret-install", dataDir: "/var/lib/secret-data", store: "default", nodePath: "/opt/node-22/bin/node", usesPostgres: false };

  it("names no server path when paths are not to be shown", () => {
    const text = mcpClientConfigText({ baseUrl: "http://127.0.0.1:3000", stdio: mcpStdioLaunch({ ...server, showPaths: false }) });
    for (const secret of ["/srv/secret-install", "/var/lib/secret-data", "/opt/node-22"]) expect(text).not.toContain(secret);
    expect(text).toContain("<dualmind folder>/scripts/dualmind.mjs");
    expect(text).toContain('"DATA_DIR": "<DATA_DIR>"');
  });

  it("names this installation's paths for an admin", () => {
    const text = mcpClientConfigText({ baseUrl: "http://127.0.0.1:3000", stdio: mcpStdioLaunch({ ...server, showPaths: true }) });
    expect(text).toContain("/srv/secret-install/scripts/dualmind.mjs");
    expect(text).toContain("/var/lib/secret-data");
  });
});
