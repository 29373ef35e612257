/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native modules load from node_modules at run time; bundling them breaks
  // (sqlite-vec resolves its platform package dynamically).
  serverExternalPackages: ["better-sqlite3", "sqlite-vec"],
  outputFileTracingIncludes: {
    "/**": ["./node_modules/sqlite-vec-linux-x64/**", "./drizzle/**"],
  },
  poweredByHeader: false,
  // forbidden(): a signed-in viewer on an admin page gets a 403 "admins only" page inside the dashboard layout (SECURITY.md).
  experimental: { authInterrupts: true },
};

export default nextConfig;
