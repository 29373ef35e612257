import path from "node:path";

/**
 * The folder this installation lives in (package.json, drizzle/, native/).
 * `next start` and the npm scripts run from it; the CLI launcher
 * (scripts/dualmind.mjs) names it in DUALMIND_INSTALL_ROOT, so an MCP client
 * that starts the CLI from its own folder still finds the migrations.
 * Bundled server code cannot use its own file location for this.
 */
export const INSTALL_ROOT = path.resolve(process.env.DUALMIND_INSTALL_ROOT || process.cwd());
