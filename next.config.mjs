import fs from "node:fs";

// The agent API's plain paths skip the proxy (proxy.ts); their security headers are set here, from the same values.
const security = JSON.parse(fs.readFileSync(new URL("./lib/http/security-headers.json", import.meta.url), "utf8"));
const apiHeaders = [...Object.entries(security.headers), ["Content-Security-Policy", Object.entries({ ...security.policy, ...security.policyWithoutPage }).map(([d, v]) => `${d} ${v}`).join("; ")]];

/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native modules load from node_modules at run time; bundling them breaks
  // (sqlite-vec resolves its platform package dynamically; usearch picks its prebuilt addon at run time).
  serverExternalPackages: ["better-sqlite3", "sqlite-vec", "usearch"],
  outputFileTracingIncludes: {
    "/**": ["./node_modules/sqlite-vec-linux-x64/**", "./node_modules/usearch/prebuilds/**", "./drizzle/**"],
  },
  poweredByHeader: false,
  // `npm test` type-checks the whole project (tests too) in its own phase after the build; its build skips the same check.
  typescript: { ignoreBuildErrors: process.env.DM_TEST_BUILD_TYPES_CHECKED === "1" },
  // forbidden(): a signed-in viewer on an admin page gets a 403 "admins only" page inside the dashboard layout (SECURITY.md).
  // caseSensitiveRoutes: the headers' path pattern matches exactly as the proxy's matcher does (case and all).
  experimental: { authInterrupts: true, caseSensitiveRoutes: true },
  async headers() {
    return [{ source: security.plainApiPaths, headers: apiHeaders.map(([key, value]) => ({ key, value })) }];
  },
};

export default nextConfig;
