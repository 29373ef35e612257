/**
 * Tiny CLI toolkit: commands, flags, --json output, progress bars on stderr,
 * and exit codes scripts can trust (0 ok, 1 failure found, 2 usage error).
 */
import { ConfigError, CONFIG_DOCS } from "../lib/config";
import { registerEmbeddableKinds } from "../lib/embeddable-kinds";
import { isAppError } from "../lib/errors";
import { storesOnPostgres } from "../lib/stores/on-postgres";

export type Flags = Record<string, string | boolean>;
export type CommandContext = { args: string[]; flags: Flags; json: boolean; out: (human: string, data?: unknown) => void };
export type Command = {
  name: string; // e.g. "users add"
  usage: string; // e.g. "users add <username> --role viewer|admin [--password P]"
  summary: string;
  run: (ctx: CommandContext) => Promise<number | void> | number | void;
};

export class UsageError extends Error {}

/**
 * Refuse a command that works on a SQLite store's files (index.db, its FTS5
 * and sqlite-vec tables, the memory folder) when DATABASE_URL puts the stores
 * in PostgreSQL: a usage error (exit 2) whose message says what to use there.
 */
/** The message is built only when refusing (it may name PostgreSQL things, such as a store's schema, that SQLite has no use for). */
export function refuseWithDatabaseUrl(message: string | (() => string)): void {
  if (storesOnPostgres()) throw new UsageError(typeof message === "function" ? message() : message);
}

export function parseArgv(argv: string[]): { positional: string[]; flags: Flags } {
  const positional: string[] = [];
  const flags: Flags = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) flags[a.slice(2, eq)] = a.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) flags[a.slice(2)] = argv[++i];
      else flags[a.slice(2)] = true;
    } else positional.push(a);
  }
  return { positional, flags };
}

export function flagString(flags: Flags, name: string): string | undefined {
  const v = flags[name];
  if (v === undefined || v === false) return undefined;
  if (v === true) throw new UsageError(`--${name} needs a value`);
  return v;
}

/** A progress bar on stderr (only when stderr is a terminal and not --json). */
export function progressBar(label: string, enabled: boolean) {
  const tty = enabled && process.stderr.isTTY;
  const started = Date.now();
  return {
    update(done: number, total: number) {
      if (!tty) return;
      const width = 30;
      const frac = total > 0 ? Math.min(1, done / total) : 0;
      const rate = done / Math.max(0.001, (Date.now() - started) / 1000);
      process.stderr.write(`\r${label} [${"#".repeat(Math.round(frac * width)).padEnd(width, ".")}] ${done}/${total} ${rate.toFixed(0)}/s`);
    },
    done() {
      if (tty) process.stderr.write("\n");
    },
  };
}

/** The command whose name is the longest run of leading words. */
export function findCommand(commands: Command[], positional: string[]): Command | undefined {
  return [...commands].sort((a, b) => b.name.split(" ").length - a.name.split(" ").length).find((c) => c.name.split(" ").every((w, i) => positional[i] === w));
}

export async function runCli(commands: Command[], argv: string[]): Promise<number> {
  // The CLI is an entry point: reindex, reembed, health and the worker need every embeddable kind.
  registerEmbeddableKinds();
  const { positional, flags } = parseArgv(argv);
  const json = flags.json === true;
  const out = (human: string, data?: unknown) => {
    if (json) process.stdout.write(JSON.stringify(data ?? { message: human }, null, 2) + "\n");
    else process.stdout.write(human + "\n");
  };
  const cmd = findCommand(commands, positional);
  if (!cmd || flags.help === true) {
    const lines = [
      "usage: dualmind <command> [--json]",
      "",
      ...commands.map((c) => `  ${c.usage.padEnd(64)} ${c.summary}`),
      "",
      `With DATABASE_URL: ${CONFIG_DOCS.find((d) => d.variable === "DATABASE_URL")?.meaning}.`,
      "The CLI's store commands (stores, search, verify, reindex, recall, reflection, metrics status, health, reembed, embeddings status|retry-parked, graph) then act on the PostgreSQL stores, as the API does; " +
        "backup, restore, export bundle, import bundle, embeddings rebuild-index and reindex --fts-only work on SQLite files only and refuse (exit 2), saying what to use instead.",
    ];
    (cmd || flags.help === true ? process.stdout : process.stderr).write(lines.join("\n") + "\n");
    return cmd || flags.help === true ? 0 : 2;
  }
  try {
    const code = await cmd.run({ args: positional.slice(cmd.name.split(" ").length), flags, json, out });
    return code ?? 0;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`error: ${e.message}\nusage: dualmind ${cmd.usage}\n`);
      return 2;
    }
    if (e instanceof ConfigError || isAppError(e)) {
      process.stderr.write(`error: ${e.message}\n`);
      return isAppError(e) && e.status < 500 ? 2 : 1;
    }
    if (e && typeof e === "object" && "issues" in e) {
      process.stderr.write(`error: invalid input: ${JSON.stringify((e as { issues: unknown }).issues)}\n`);
      return 2;
    }
    throw e;
  }
}
