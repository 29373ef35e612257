import { eq, sql } from "drizzle-orm";
import { getConfig } from "../config";
import { processLedger } from "../db/engine";
import { dialect, readLedger, row, tablePair, upsert, writeLedger } from "../db/port";
import { providerState } from "../db/schema/governance";
import { providerState as providerStatePg } from "../db/schema/pg/governance";
import { log } from "../log";
import { FINGERPRINT_PROBE } from "./providers";
import { getEmbedder } from "./model";
import { EmbeddingError } from "./types";

/**
 * Is the embedding provider up? Learned from real calls (worker batches,
 * query embeddings) and persisted in governance.db — with DATABASE_URL in
 * PostgreSQL's provider_state, one row every replica reads — so every process (the
 * server, a separate `npm run worker`, the CLI) reports the same answer.
 * While it is down, a recovery probe runs at most every PROBE_INTERVAL_MS
 * (never on the request path); while it is up nothing probes: an idle
 * provider costs nothing.
 */
export const PROBE_INTERVAL_MS = 2_000;
/** A provider that answers "ok" is rewritten at most this often (a busy worker would otherwise write per batch). */
const OK_REWRITE_MS = 10_000;

const providerStates = tablePair(providerState, providerStatePg);

export type ProviderHealth = { ok: boolean; error: string | null; checkedAt: number; changedAt: number } | null;

const g = globalThis as unknown as { __dualmindProviderProbe?: { inFlight: boolean; lastWrite: { ok: boolean; at: number } | null; key: string } };

/** Provider, model and endpoint: two configurations are two providers. */
export function providerConfigKey(): string {
  const e = getConfig().embed;
  return e.provider === "openai" ? `openai:${e.model}@${e.baseUrl}` : `${e.provider}:${e.model}`;
}

function local() {
  const key = providerConfigKey();
  if (g.__dualmindProviderProbe?.key !== key) g.__dualmindProviderProbe = { inFlight: false, lastWrite: null, key };
  return g.__dualmindProviderProbe;
}

/** Failures that mean "the provider cannot answer" (not "this text was refused" or "slow down"). */
export function isProviderDownError(e: unknown): boolean {
  if (!(e instanceof EmbeddingError)) return true;
  return e.kind === "server" || e.kind === "timeout" || e.kind === "network" || e.kind === "auth" || e.kind === "unavailable";
}

/**
 * Record one outcome of a real provider call. Cheap when nothing changed; a
 * failure to write is logged, never thrown. `changed_at` moves only when the
 * shared row's verdict flips (a conditional upsert), so replicas reporting
 * the same outage agree on when it began.
 */
export async function recordProviderOutcome({ ok, error = null, now = Date.now() }: { ok: boolean; error?: string | null; now?: number }): Promise<void> {
  const l = local();
  if (ok && l.lastWrite?.ok && now - l.lastWrite.at < OK_REWRITE_MS) return;
  const e = getConfig().embed;
  const values = { configKey: l.key, provider: e.provider, model: e.model, ok, error: ok ? null : (error ?? "unknown error").slice(0, 500), checkedAt: now, changedAt: now };
  l.lastWrite = { ok, at: now };
  try {
    await writeLedger(await processLedger(), function* () {
      // SQLite binds the boolean as 1 or 0.
      const stored = (yield* dialect()) === "pg" ? ok : Number(ok);
      yield* upsert(providerStates, values, (t) => t.configKey, { ok, error: values.error, checkedAt: now, changedAt: sql`case when "provider_state"."ok" = ${stored} then "provider_state"."changed_at" else ${now} end` });
    });
  } catch (err) {
    l.lastWrite = null;
    log("warn", "could not record the provider state", { error: (err as Error).message });
  }
}

/** The provider as every process (every replica, with DATABASE_URL) last saw it; null before any call was recorded. */
export async function readProviderHealth(): Promise<ProviderHealth> {
  const found = await readLedger(await processLedger(), row(providerStates, (t) => eq(t.configKey, providerConfigKey())));
  return found ? { ok: found.ok, error: found.error, checkedAt: found.checkedAt, changedAt: found.changedAt } : null;
}

/**
 * When the provider was last seen down, try it again in the background (one
 * probe at a time, at most every PROBE_INTERVAL_MS). Returns at once.
 */
export function probeProviderIfDown({ health, now = Date.now() }: { health: ProviderHealth; now?: number }): void {
  if (!health || health.ok || now - health.checkedAt < PROBE_INTERVAL_MS) return;
  const l = local();
  if (l.inFlight) return;
  l.inFlight = true;
  void (async () => {
    try {
      await getEmbedder().provider.embed([FINGERPRINT_PROBE], "document");
      await recordProviderOutcome({ ok: true });
    } catch (e) {
      if (isProviderDownError(e)) await recordProviderOutcome({ ok: false, error: (e as Error).message });
      else await recordProviderOutcome({ ok: true });
    } finally {
      l.inFlight = false;
    }
  })();
}

/**
 * The embedding provider's error text (its base URL, up to 300 characters
 * of its reply) as the kind of failure a caller can act on: what an admin
 * reads whole in store health is, everywhere else, only this.
 */
export function providerErrorKind(text: string): string {
  const kinds: [RegExp, string][] = [
    [/timed out/i, "timeout"],
    [/^cannot reach/i, "network"],
    [/rate-limited/i, "rate_limited"],
    [/refused the API key/i, "auth"],
    [/provider failed \(/i, "server"],
    [/rejected the request/i, "bad_request"],
    [/-d vector/i, "dimension_mismatch"],
    [/unexpected body|returned \d+ vectors/i, "bad_response"],
    [/transformers/i, "unavailable"],
  ];
  return `provider ${kinds.find(([re]) => re.test(text))?.[1] ?? "error"}`;
}
