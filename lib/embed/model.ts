import { eq } from "drizzle-orm";
import { getConfig } from "../config";
import type { StoreHandle } from "../db/connection";
import { embeddingModels } from "../db/schema/embed";
import { meta } from "../db/schema/index";
import { computeFingerprint, createProvider, fingerprintFromJson, type Fingerprint } from "./providers";
import { resetHoldsForTests } from "./healing";
import { isProviderDownError, recordProviderOutcome } from "./provider-state";
import type { EmbeddingProvider } from "./types";

type Embedder = { provider: EmbeddingProvider; fingerprint: Promise<Fingerprint> };

const g = globalThis as unknown as { __dualmindEmbedder?: Embedder & { configKey: string; failedAt?: number } };

/** A provider that was down when its fingerprint was taken is asked again after this long (not on every call). */
const FINGERPRINT_RETRY_MS = 2_000;

/**
 * The configured provider and its fingerprint, one per process (rebuilt if
 * the config changes, as in tests, or if the fingerprint failed: a provider
 * down at start-up must not stay "down" for the life of the process).
 */
export function getEmbedder(): Embedder {
  const config = getConfig().embed;
  const configKey = JSON.stringify(config);
  const cur = g.__dualmindEmbedder;
  if (cur?.configKey !== configKey || (cur.failedAt !== undefined && Date.now() - cur.failedAt >= FINGERPRINT_RETRY_MS)) {
    const provider = createProvider(config);
    const fingerprint = computeFingerprint(provider);
    const entry: Embedder & { configKey: string; failedAt?: number } = { provider, fingerprint, configKey };
    // An unreachable provider must not become an unhandled rejection; callers await and report it. The probe is a
    // real call under the provider's own timeout: an outage it finds is every process's, as a worker's or query's
    // is (recorded here, not only if a status happens to ask before the next probe starts).
    fingerprint.catch((e: unknown) => {
      entry.failedAt = Date.now();
      if (isProviderDownError(e)) recordProviderOutcome({ ok: false, error: (e as Error).message }).catch(() => undefined);
    });
    g.__dualmindEmbedder = entry;
  }
  return g.__dualmindEmbedder!;
}

export function resetEmbedderForTests(): void {
  g.__dualmindEmbedder = undefined;
  resetHoldsForTests();
}

function readMeta({ handle, key }: { handle: StoreHandle; key: string }): string | undefined {
  return handle.db.select({ value: meta.value }).from(meta).where(eq(meta.key, key)).get()?.value;
}

function writeMeta({ handle, key, value }: { handle: StoreHandle; key: string; value: string }): void {
  handle.db.insert(meta).values({ key, value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
}

export function rememberFingerprint({ handle, fingerprint }: { handle: StoreHandle; fingerprint: Fingerprint }): void {
  handle.db.insert(embeddingModels).values({ fingerprintId: fingerprint.id, info: JSON.stringify(fingerprint), firstSeenAt: Date.now() }).onConflictDoNothing().run();
}

/** The fingerprint whose vectors serve this store, or undefined before its first vectors. Read-only. */
export function readActiveFingerprintId({ handle }: { handle: StoreHandle }): string | undefined {
  return readMeta({ handle, key: "active_fingerprint" });
}

/**
 * The fingerprint whose vectors serve this store's searches. A store that has
 * none yet adopts the configured model; after that only a finished re-embed
 * switches it, so a config change shows up as drift instead of mixing models.
 */
export function getActiveFingerprintId({ handle, configured }: { handle: StoreHandle; configured: Fingerprint }): string {
  const active = readActiveFingerprintId({ handle });
  if (active) return active;
  handle.sqlite.transaction(() => {
    rememberFingerprint({ handle, fingerprint: configured });
    if (!readActiveFingerprintId({ handle })) writeMeta({ handle, key: "active_fingerprint", value: configured.id });
  }).immediate();
  return readActiveFingerprintId({ handle })!;
}

export function setActiveFingerprintId({ handle, fingerprintId }: { handle: StoreHandle; fingerprintId: string }): void {
  writeMeta({ handle, key: "active_fingerprint", value: fingerprintId });
}

export function getFingerprintInfo({ handle, fingerprintId }: { handle: StoreHandle; fingerprintId: string }): Fingerprint | null {
  const row = handle.db.select({ info: embeddingModels.info }).from(embeddingModels).where(eq(embeddingModels.fingerprintId, fingerprintId)).get();
  return row ? fingerprintFromJson(row.info) : null;
}
