import { randomBytes, scryptSync, timingSafeEqual } from "node:crypto";

// scrypt cost parameters; stored with each hash so they can be raised later.
const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, KEYLEN, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

export function verifyPassword(password: string, stored: string): boolean {
  // scrypt keys HMAC with the password, and HMAC pads a short key with zero
  // bytes, so "pw" and "pw\0" hash alike. No stored password holds a NUL
  // (passwordSchema), so a candidate with one never matches.
  if (password.includes("\u0000")) return false;
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const expected = Buffer.from(hashB64, "base64");
  const actual = scryptSync(password, Buffer.from(saltB64, "base64"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A password people can type: 20 url-safe characters (~120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString("base64url");
}
