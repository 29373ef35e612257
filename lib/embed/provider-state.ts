import { eq } from "drizzle-orm";
import { getConfig } from "../config";
import { getGovernance } from "../db/connection";
import { providerState, type ProviderStateRow } from "../db/schema/governance";
import { log } from "../log";
import { FINGERPRINT_PROBE } from "./providers";
import { getEmbedder } from "./model";
import { EmbeddingError } from "./types";

/**
 * Is the embedding provider up? Learned from real calls (worker batches,
 * query embeddings) and persisted in governance.db, so every process (the
 * server, a separate `npm run worker`, the CLI) reports the same answer.
 * While it is down, a recovery probe runs at most every PROBE_INTERVAL_MS
 * (never on the request path); while it is up nothing probes: an idle
 * provider costs nothing.
 */
export const PROBE_INTERVAL_MS = 2_000;
/** A provider that answers "ok" is rewritten at most this often (a busy worker would otherwise write per batch). */
const OK_REWRITE_MS = 10_000;

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

/** Record one outcome of a real provider call. Cheap when nothing changed; a failure to write is logged, never thrown. */
export function recordProviderOutcome({ ok, error = null, now = Date.now() }: { ok: boolean; error?: string | null; now?: number }): void {
  const l = local();
  if (ok && l.lastWrite?.ok && now - l.lastWrite.at < OK_REWRITE_MS) return;
  const e = getConfig().embed;
  try {
    const { db } = getGovernance();
    const prev = db.select({ ok: providerState.ok, changedAt: providerState.changedAt }).from(providerState).where(eq(providerState.configKey, l.key)).get();
    const changedAt = prev && prev.ok === ok ? prev.changedAt : now;
    const row = { configKey: l.key, provider: e.provider, model: e.model, ok, error: ok ? null : (error ?? "unknown error").slice(0, 500), checkedAt: now, changedAt };
    db.insert(providerState).values(row).onConflictDoUpdate({ target: providerState.configKey, set: row }).run();
    l.lastWrite = { ok, at: now };
  } catch (err) {
    log("warn", "could not record the provider state", { error: (err as Error).message });
  }
}

export function readProviderHealth(): ProviderHealth {
  const row: Pick<ProviderStateRow, "ok" | "error" | "checkedAt" | "changedAt"> | undefined = getGovernance()
    .db.select({ ok: providerState.ok, error: providerState.error, checkedAt: providerState.checkedAt, changedAt: providerState.changedAt })
    .from(providerState)
    .where(eq(providerState.configKey, providerConfigKey()))
    .get();
  return row ?? null;
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
      recordProviderOutcome({ ok: true });
    } catch (e) {
      if (isProviderDownError(e)) recordProviderOutcome({ ok: false, error: (e as Error).message });
      else recordProviderOutcome({ ok: true });
    } finally {
      l.inFlight = false;
    }
  })();
}
