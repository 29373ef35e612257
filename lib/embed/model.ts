import { getConfig } from "../config";
import type { StoreHandle } from "../db/connection";
import { computeFingerprint, createProvider, type Fingerprint } from "./providers";
import type { EmbeddingProvider } from "./types";

type Embedder = { provider: EmbeddingProvider; fingerprint: Promise<Fingerprint> };

const g = globalThis as unknown as { __dualmindEmbedder?: Embedder & { configKey: string } };

/** The configured provider and its fingerprint, one per process (rebuilt if the config changes, as in tests). */
export function getEmbedder(): Embedder {
  const config = getConfig().embed;
  const configKey = JSON.stringify(config);
  if (g.__dualmindEmbedder?.configKey !== configKey) {
    const provider = createProvider(config);
    const fingerprint = computeFingerprint(provider);
    // An unreachable provider must not become an unhandled rejection; callers await and report it.
    fingerprint.catch(() => undefined);
    g.__dualmindEmbedder = { provider, fingerprint, configKey };
  }
  return g.__dualmindEmbedder;
}

export function resetEmbedderForTests(): void {
  g.__dualmindEmbedder = undefined;
}

function readMeta(handle: StoreHandle, key: string): string | undefined {
  return (handle.sqlite.prepare("select value from meta where key = ?").get(key) as { value: string } | undefined)?.value;
}

function writeMeta(handle: StoreHandle, key: string, value: string): void {
  handle.sqlite.prepare("insert into meta(key, value) values (?, ?) on conflict(key) do update set value = excluded.value").run(key, value);
}

export function rememberFingerprint(handle: StoreHandle, fp: Fingerprint): void {
  handle.sqlite.prepare("insert or ignore into embedding_models(fingerprint_id, info, first_seen_at) values (?, ?, ?)").run(fp.id, JSON.stringify(fp), Date.now());
}

/**
 * The fingerprint whose vectors serve this store's searches. A store that has
 * none yet adopts the configured model; after that only a finished re-embed
 * switches it, so a config change shows up as drift instead of mixing models.
 */
export function getActiveFingerprintId(handle: StoreHandle, configured: Fingerprint): string {
  const active = readMeta(handle, "active_fingerprint");
  if (active) return active;
  handle.sqlite.transaction(() => {
    rememberFingerprint(handle, configured);
    if (!readMeta(handle, "active_fingerprint")) writeMeta(handle, "active_fingerprint", configured.id);
  }).immediate();
  return readMeta(handle, "active_fingerprint")!;
}

export function setActiveFingerprintId(handle: StoreHandle, fingerprintId: string): void {
  writeMeta(handle, "active_fingerprint", fingerprintId);
}

export function getFingerprintInfo(handle: StoreHandle, fingerprintId: string): Fingerprint | null {
  const row = handle.sqlite.prepare("select info from embedding_models where fingerprint_id = ?").get(fingerprintId) as { info: string } | undefined;
  return row ? (JSON.parse(row.info) as Fingerprint) : null;
}
