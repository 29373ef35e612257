import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { getConfig } from "../config";
import { mkdirPrivate, PRIVATE_FILE_MODE } from "../private-fs";

let cached: string | undefined;

/**
 * The JWT signing secret: NEXTAUTH_SECRET, or one generated on first run and
 * kept in DATA_DIR/.auth-secret (mode 600) so sessions survive restarts.
 */
export function getAuthSecret(): string {
  if (cached) return cached;
  const configured = getConfig().authSecret;
  if (configured) return (cached = configured);
  const file = path.join(getConfig().dataDir, ".auth-secret");
  try {
    cached = fs.readFileSync(file, "utf8").trim();
  } catch {
    mkdirPrivate(path.dirname(file));
    const secret = randomBytes(32).toString("base64url");
    try {
      // "wx": if another process created it first, read theirs instead.
      fs.writeFileSync(file, secret + "\n", { mode: PRIVATE_FILE_MODE, flag: "wx" });
      cached = secret;
    } catch {
      cached = fs.readFileSync(file, "utf8").trim();
    }
  }
  return cached;
}

export function resetAuthSecretForTests(): void {
  cached = undefined;
}
