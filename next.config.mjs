/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native modules load from node_modules at run time; bundling them breaks
  // (sqlite-vec resolves its platform package dynamically).
  serverExternalPackages: ["better-sqlite3", "sqlite-vec"],
  outputFileTracingIncludes: {
    "/**": ["./node_modules/sqlite-vec-linux-x64/**", "./drizzle/**"],
  },
  poweredByHeader: false,
};

export default nextConfig;
