/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native modules load from node_modules at run time; bundling them breaks
  // (sqlite-vec resolves its platform package dynamically; usearch picks its prebuilt addon at run time).
  serverExternalPackages: ["better-sqlite3", "sqlite-vec", "usearch"],
  outputFileTracingIncludes: {
    "/**": ["./node_modules/sqlite-vec-linux-x64/**", "./node_modules/usearch/prebuilds/**", "./drizzle/**"],
  },
  poweredByHeader: false,
  // forbidden(): a signed-in viewer on an admin page gets a 403 "admins only" page inside the dashboard layout (SECURITY.md).
  experimental: { authInterrupts: true },
};

export default nextConfig;
