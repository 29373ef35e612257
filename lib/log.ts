import { getConfig } from "./config";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
type Level = keyof typeof LEVELS;

function enabled(level: Level): boolean {
  let threshold: Level = "info";
  try {
    threshold = getConfig().logLevel;
  } catch {
    // A bad config is reported elsewhere; logging must still work.
  }
  return LEVELS[level] >= LEVELS[threshold];
}

/** Structured one-line logs on stderr, so stdout stays free for CLI/MCP protocol output. */
export function log(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  if (!enabled(level)) return;
  const line = JSON.stringify({ t: new Date().toISOString(), level, msg: message, ...fields });
  process.stderr.write(line + "\n");
}
