import fs from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AppError } from "@/lib/errors";
import { recallBackend } from "@/lib/recall/backend";
import { MAX_SANITIZE_CHARS, sanitizeText } from "@/lib/recall/sanitize";
import { openStore } from "@/lib/stores/stores";
import { seedStore, seedTrace, sqliteOnlyCheck, storeSql, useTestBackend, type TestEnv } from "./backend";

// Real-looking (but fake) secrets of the shapes agents paste into error messages.
const SECRETS = {
  openai: "sk-proj-4fJx9QmT2vLp8RkZ7wYc3NbE6hUaG1sD5oKiW0qXe",
  anthropic: "sk-ant-api03-Zq8xT4mK2pL9vB7nR3cW6yH1jF5dS0aG-QwErTy",
  github: "ghp_7Hq2LmX9vK4pT8zR3nW6cY1bF5dJ0sA2gE4u",
  githubPat: "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdEFGH",
  gitlab: "glpat-x8Fz2Kq9LmT4vR7wN3pY",
  slack: "xoxb-2849302845-5829304857-Qz8xT4mK2pL9vB7nR3cW6yH1",
  aws: "AKIAIOSFODNN7EXAMPL3",
  google: "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
  stripe: "sk_live_51HqLmX9vK4pT8zR3nW6cY1bF",
  huggingface: "hf_QmT2vLp8RkZ7wYc3NbE6hUaG1sD5oKiW0q",
  dualmind: "dm_k4Pz9QwX2mT7vL3nR8cY6bF1",
  jwt: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
  bearer: "a8F3kL9qZ2xV7mN4pR6tY1wB5cD0eG8h",
  urlPassword: "Sup3rS3cret!",
  assignedPassword: "hunter2-Prod",
  assignedKey: "q9W8e7R6t5Y4u3I2o1P0",
  highEntropy: "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc",
  email: "jane.doe@example.com",
  ipv4: "203.0.113.42",
  ipv6: "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
  homeUser: "jdoe",
  macUser: "alice",
  winUser: "bob",
};

const CORPUS = [
  `Call to OpenAI failed with key ${SECRETS.openai} (429 rate limit)`,
  `anthropic client init: ANTHROPIC_API_KEY=${SECRETS.anthropic}`,
  `git push rejected; token ${SECRETS.github} lacks repo scope`,
  `clone with ${SECRETS.githubPat} failed`,
  `gitlab ci: ${SECRETS.gitlab} expired`,
  `slack webhook post failed using ${SECRETS.slack}`,
  `s3 upload denied for access key ${SECRETS.aws}`,
  `maps geocode failed key=${SECRETS.google}`,
  `stripe charge error with ${SECRETS.stripe}`,
  `model download 401 with ${SECRETS.huggingface}`,
  `dualmind search returned 403 for ${SECRETS.dualmind}`,
  `session cookie contained ${SECRETS.jwt} and was rejected`,
  `curl -H "Authorization: Bearer ${SECRETS.bearer}" returned 401 unauthorized`,
  `postgres connection refused: postgres://admin:${SECRETS.urlPassword}@db.internal:5432/orders`,
  `login test used password=${SECRETS.assignedPassword} and timed out`,
  `config had client_secret: "${SECRETS.assignedKey}" in plain text`,
  `random blob ${SECRETS.highEntropy} found in logs`,
  `notify ${SECRETS.email} when the migration finishes`,
  `ssh timeout connecting to ${SECRETS.ipv4} port 22`,
  `ipv6 listener bound to ${SECRETS.ipv6} failed`,
  `tests read fixtures from /home/${SECRETS.homeUser}/projects/app/tests`,
  `build cache in /Users/${SECRETS.macUser}/Library/Caches/app`,
  `installer wrote C:\\Users\\${SECRETS.winUser}\\AppData\\Local\\app`,
];

// Words that make a descriptor useful: they must survive sanitizing.
const USEFUL = ["OpenAI", "429", "rate", "limit", "push", "rejected", "scope", "slack", "webhook", "s3", "upload", "denied", "stripe", "charge", "403", "Authorization", "401", "unauthorized", "postgres", "connection", "refused", "db.internal", "5432", "orders", "login", "timed", "client_secret", "migration", "ssh", "timeout", "port", "projects/app/tests", "Library/Caches", "AppData"];

describe("sanitizer", () => {
  it("removes every planted secret and keeps the useful words", () => {
    const cleaned = CORPUS.map(sanitizeText).join("\n");
    for (const [name, secret] of Object.entries(SECRETS)) {
      expect(cleaned.includes(secret), `${name} leaked: ${cleaned}`).toBe(false);
    }
    for (const word of USEFUL) expect(cleaned).toContain(word);
    expect(cleaned).toContain("postgres://[USER]:[REDACTED_PASSWORD]@db.internal:5432/orders");
    expect(cleaned).toContain("Bearer [REDACTED_TOKEN]");
    expect(cleaned).toContain("/home/[USER]/projects/app/tests");
    expect(cleaned).toContain("notify [EMAIL] when");
    expect(cleaned).toContain("connecting to [IP] port 22");
  });

  it("is idempotent and leaves ordinary text alone", () => {
    for (const line of CORPUS) expect(sanitizeText(sanitizeText(line))).toBe(sanitizeText(line));
    const plain = "Fix auth token refresh in lib/auth/session.ts: token: expired after 3600 seconds, version 1.2.3, commit abc1234";
    expect(sanitizeText(plain)).toBe(plain);
  });

  // Issue 14 finding 7: each of these shapes took quadratic time (a 128 KB field: tens of seconds to minutes).
  // At 256 KB they must finish within the test timeout (30 s; old code: minutes) and still redact what they carry.
  describe("hostile input (256 KB runs)", () => {
    const RUN = 256 * 1024;
    const run = (unit: string) => unit.repeat(Math.ceil(RUN / unit.length));

    it("a run of `a-` (assignment and url rules) is left alone, and a password at its end still goes", () => {
      const text = run("a-");
      expect(sanitizeText(text)).toBe(text);
      expect(sanitizeText(`${text}password=hunter2-Prod`)).toBe(`${text}password=${"[REDACTED_PASSWORD]"}`);
    });

    it("a run of `a.` (email rule) is left alone, and an address at its end still goes", () => {
      const text = run("a.");
      expect(sanitizeText(text)).toBe(text);
      expect(sanitizeText(`${text} jane.doe@example.com`)).toBe(`${text} [EMAIL]`);
    });

    it("a run of `eyJ-` (jwt rule) is left alone, and a token glued to its end still goes", () => {
      const text = run("eyJ-");
      expect(sanitizeText(text)).toBe(text);
      const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
      expect(sanitizeText(`${text} x-${jwt} end`)).toBe(`${text} x-[REDACTED_TOKEN] end`);
    });

    it("a run of `a+` (url scheme rule) is left alone, and a URL password after it still goes", () => {
      const text = run("a+");
      expect(sanitizeText(text)).toBe(text);
      expect(sanitizeText(`${text} postgres://admin:Sup3rS3cret!@db:5432/x`)).toBe(`${text} postgres://[USER]:[REDACTED_PASSWORD]@db:5432/x`);
    });

  });

  describe("storage", () => {
    let env: TestEnv;
    beforeEach(async () => {
      env = await useTestBackend();
      await seedStore("ops");
    });
    afterEach(async () => env.cleanup());

    it("never persists the original: no stored row (and on SQLite no byte of the database file) holds a planted secret", async () => {
      await seedTrace(
        "ops",
        {
          intent: { verb: "deploy", target: `api with ${SECRETS.openai}` },
          shard_type: "ops",
          key_files: [`/home/${SECRETS.homeUser}/deploy.sh`],
          outcome: "failure",
          key_issue: CORPUS.join(" "),
          error_tags: [`user:${SECRETS.email}`],
        },
        "agent-1",
      );
      await recallBackend().recordLearning({ store: "ops", agentId: "agent-1", input: { predicate: "avoid_key", args: { key: SECRETS.github, host: SECRETS.ipv4 }, description: `never log ${SECRETS.stripe}` } });
      // Every row of the tables the write touched, as text: the trace, the learning, their queued vectors.
      const stored = JSON.stringify(await Promise.all(["reasoning_traces", "learnings", "embed_queue"].map((t) => storeSql("ops", `select * from ${t}`))));
      for (const [name, secret] of Object.entries(SECRETS)) expect(stored.includes(secret), `${name} was stored`).toBe(false);
      expect(stored).toContain("[REDACTED_API_KEY]");
      await sqliteOnlyCheck("recall-sanitize: the bytes of index.db (PostgreSQL's files are the server's)", () => {
        const h = openStore({ store: "ops" });
        h.sqlite.pragma("wal_checkpoint(TRUNCATE)");
        const bytes = fs.readFileSync(h.file).toString("latin1");
        for (const [name, secret] of Object.entries(SECRETS)) expect(bytes.includes(secret), `${name} was written to disk`).toBe(false);
        expect(bytes).toContain("[REDACTED_API_KEY]");
      });
    });

    it("refuses (413) a learning whose text is over the sanitize budget, and stores nothing", async () => {
      // The shape of the finding: 300 args of `a-a-a…` (~600 KB); each arg alone is within its schema.
      const args = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`arg${i}`, "a-".repeat(1000)]));
      let error: unknown;
      try {
        await recallBackend().recordLearning({ store: "ops", agentId: "agent-1", input: { predicate: "hostile", args } });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: "payload_too_large", status: 413 });
      expect((error as AppError).message).toContain(String(MAX_SANITIZE_CHARS));
      expect(await storeSql("ops", "select cast(count(*) as integer) as n from learnings")).toEqual([{ n: 0 }]);
      // Just under the budget is accepted and sanitized.
      const within: Record<string, string> = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`arg${i}`, "a-".repeat(1000)]));
      within.key = SECRETS.github;
      const ok = await recallBackend().recordLearning({ store: "ops", agentId: "agent-1", input: { predicate: "hostile", args: within } });
      expect(ok.learning.args.key).toBe("[REDACTED_API_KEY]");
    });
  });
});
