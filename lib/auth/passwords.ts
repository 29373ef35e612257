import { randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from "node:crypto";

// scrypt cost parameters; stored with each hash so they can be raised later.
const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

/** crypto.scrypt as a promise: the work runs on libuv's thread pool, not the event loop. */
function scryptAsync(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

function formatHash(salt: Buffer, hash: Buffer): string {
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return formatHash(salt, await scryptAsync(password, salt, KEYLEN, { N, r: R, p: P }));
}

/**
 * Blocking variant for one caller only: the first admin made by bootstrapApp
 * at start-up, before the server takes requests (instrumentation's register()
 * and `npm start` both finish it first), so there is no request to stall.
 * Everything that runs on a request uses hashPassword.
 */
export function hashPasswordBeforeServing(password: string): string {
  const salt = randomBytes(16);
  return formatHash(salt, scryptSync(password, salt, KEYLEN, { N, r: R, p: P }));
}

export async function verifyPassword({ password, stored }: { password: string; stored: string }): Promise<boolean> {
  // scrypt keys HMAC with the password, and HMAC pads a short key with zero
  // bytes, so "pw" and "pw\0" hash alike. No stored password holds a NUL
  // (passwordSchema), so a candidate with one never matches.
  if (password.includes("\u0000")) return false;
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const expected = Buffer.from(hashB64, "base64");
  if (expected.length === 0) return false;
  let actual: Buffer;
  try {
    actual = await scryptAsync(password, Buffer.from(saltB64, "base64"), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  } catch {
    // Cost parameters scrypt refuses: a damaged row matches nothing.
    return false;
  }
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A password people can type: 20 url-safe characters (~120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString("base64url");
}
