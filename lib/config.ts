import { z } from "zod";
import path from "node:path";

/**
 * Every setting dualmind reads from the environment, validated once.
 * Defaults work with nothing set: data in ./data, served on 127.0.0.1:3000.
 */
const boolFromEnv = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");

const globList = z
  .string()
  .transform((s) => s.split(",").map((g) => g.trim()).filter(Boolean));

export type SourceRoot = { store: string; dir: string; name: string };

/** `store=/abs/dir,other=/abs/dir2`: each root is indexed into its store as `source/<basename>/...`. */
function parseSourceRoots(raw: string, ctx: z.RefinementCtx): SourceRoot[] {
  const roots: SourceRoot[] = [];
  for (const entry of raw.split(",").map((e) => e.trim()).filter(Boolean)) {
    const eq = entry.indexOf("=");
    const store = entry.slice(0, eq);
    const dir = entry.slice(eq + 1);
    if (eq <= 0 || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(store) || !path.isAbsolute(dir)) {
      ctx.addIssue({ code: "custom", message: `entry ${JSON.stringify(entry)} must be <store>=<absolute directory>` });
      continue;
    }
    const root = { store, dir: path.resolve(dir), name: path.basename(path.resolve(dir)) };
    // Two roots of one store with one basename would map to the same document paths.
    if (roots.some((r) => r.store === store && r.name === root.name)) {
      ctx.addIssue({ code: "custom", message: `store ${store} has two roots named ${root.name}` });
      continue;
    }
    roots.push(root);
  }
  return roots;
}

const envSchema = z.object({
  DATA_DIR: z.string().min(1).default("./data"),
  HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:[\]-]+$/, "must be a host name or IP address")
    .default("127.0.0.1"),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  NEXTAUTH_URL: z.url().optional(),
  NEXTAUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  DUALMIND_ADMIN_PASSWORD: z.string().min(8, "must be at least 8 characters").optional(),
  DUALMIND_BOOTSTRAP_TOKEN: z.string().min(32, "must be at least 32 characters").optional(),
  DUALMIND_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  DUALMIND_DISABLE_VECTORS: boolFromEnv.default(false),
  DUALMIND_LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  DUALMIND_SOURCE_ROOTS: z
    .string()
    .transform((s, ctx) => parseSourceRoots(s, ctx))
    .default([]),
  DUALMIND_SOURCE_INCLUDE: globList.default(["**/*"]),
  DUALMIND_SOURCE_EXCLUDE: globList.default(["**/node_modules/**", "**/.git/**", "**/dist/**", "**/build/**"]),
  DUALMIND_MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
});

export type Config = {
  dataDir: string;
  host: string;
  port: number;
  publicUrl: string;
  authSecret: string | undefined;
  adminPassword: string | undefined;
  bootstrapToken: string | undefined;
  maxBodyBytes: number;
  disableVectors: boolean;
  logLevel: "debug" | "info" | "warn" | "error";
  sourceRoots: SourceRoot[];
  sourceInclude: string[];
  sourceExclude: string[];
  maxFileBytes: number;
};

export class ConfigError extends Error {
  constructor(public readonly issues: { variable: string; message: string }[]) {
    super(
      "Invalid configuration:\n" +
        issues.map((i) => `  ${i.variable}: ${i.message}`).join("\n"),
    );
    this.name = "ConfigError";
  }
}

/** Parse an environment (defaults to process.env). Throws ConfigError naming each bad variable. */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset": `FOO= npm start` should not fail validation.
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ""),
  );
  const result = envSchema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? "environment"),
        message: issue.message,
      })),
    );
  }
  const e = result.data;
  const hostForUrl = e.HOST.includes(":") ? `[${e.HOST}]` : e.HOST;
  return {
    dataDir: path.resolve(e.DATA_DIR),
    host: e.HOST,
    port: e.PORT,
    publicUrl: e.NEXTAUTH_URL ?? `http://${hostForUrl}:${e.PORT}`,
    authSecret: e.NEXTAUTH_SECRET,
    adminPassword: e.DUALMIND_ADMIN_PASSWORD,
    bootstrapToken: e.DUALMIND_BOOTSTRAP_TOKEN,
    maxBodyBytes: e.DUALMIND_MAX_BODY_BYTES,
    disableVectors: e.DUALMIND_DISABLE_VECTORS,
    logLevel: e.DUALMIND_LOG_LEVEL,
    sourceRoots: e.DUALMIND_SOURCE_ROOTS,
    sourceInclude: e.DUALMIND_SOURCE_INCLUDE,
    sourceExclude: e.DUALMIND_SOURCE_EXCLUDE,
    maxFileBytes: e.DUALMIND_MAX_FILE_BYTES,
  };
}

let cached: Config | undefined;

/** The process-wide config, parsed on first use. */
export function getConfig(): Config {
  cached ??= parseConfig();
  return cached;
}

/** Tests point the app at a fresh DATA_DIR; this drops the cached parse. */
export function resetConfigForTests(): void {
  cached = undefined;
}

/** Rows for the README/--help configuration table; kept beside the schema so they stay true. */
export const CONFIG_DOCS: { variable: string; default: string; meaning: string }[] = [
  { variable: "DATA_DIR", default: "./data", meaning: "where governance.db and stores/<name>/ live" },
  { variable: "HOST", default: "127.0.0.1", meaning: "address to bind; loopback unless you mean it" },
  { variable: "PORT", default: "3000", meaning: "port to serve on" },
  { variable: "NEXTAUTH_URL", default: "http://HOST:PORT", meaning: "public URL of the dashboard (sign-in callbacks)" },
  { variable: "NEXTAUTH_SECRET", default: "generated into DATA_DIR/.auth-secret", meaning: "secret signing session JWTs (≥32 chars)" },
  { variable: "DUALMIND_ADMIN_PASSWORD", default: "generated, printed once", meaning: "password of the first `admin` user when no users exist" },
  { variable: "DUALMIND_BOOTSTRAP_TOKEN", default: "unset", meaning: "optional admin-scope API token for automation (≥32 chars, agent id `bootstrap`)" },
  { variable: "DUALMIND_MAX_BODY_BYTES", default: "1048576", meaning: "largest accepted API request body; larger → 413" },
  { variable: "DUALMIND_DISABLE_VECTORS", default: "false", meaning: "do not load sqlite-vec (lexical only)" },
  { variable: "DUALMIND_LOG_LEVEL", default: "info", meaning: "debug | info | warn | error" },
  { variable: "DUALMIND_SOURCE_ROOTS", default: "unset", meaning: "extra folders to index: `store=/abs/dir,...`; each becomes `source/<basename>/...` in that store" },
  { variable: "DUALMIND_SOURCE_INCLUDE", default: "**/*", meaning: "comma-separated globs (relative to a source root) of files to index" },
  { variable: "DUALMIND_SOURCE_EXCLUDE", default: "**/node_modules/**,**/.git/**,**/dist/**,**/build/**", meaning: "comma-separated globs of files to skip; hidden files are always skipped" },
  { variable: "DUALMIND_MAX_FILE_BYTES", default: "1048576", meaning: "larger files are skipped (and counted) by reindex" },
];
