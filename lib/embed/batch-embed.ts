import { log } from "../log";
import { closeHold, currentHold, failureScopeOf, holdErrorText, noteProbeOk, openHold, takeProbeOk, workerRequestTimeoutMs, type QueueHold } from "./healing";
import { isProviderDownError, recordProviderOutcome } from "./provider-state";
import { FINGERPRINT_PROBE } from "./providers";
import { EmbeddingError, type EmbeddingProvider } from "./types";

/**
 * The provider side of one worker batch, shared by both backends' workers:
 * whether the queue may be claimed at all (a hold and its probe), and the
 * embedding call with its failures sorted by whose fault they are (see
 * ./healing.ts).
 */

/**
 * May the worker claim now? Null: yes. Otherwise the hold in force. A
 * provider hold whose wait is over sends one probe text; when it answers
 * the hold closes and the worker goes on. A disk hold whose wait is over lets
 * the worker try (its claim is the test).
 */
export async function passHold({ provider, signal, now = Date.now() }: { provider: EmbeddingProvider; signal?: AbortSignal; now?: number }): Promise<QueueHold | null> {
  const hold = currentHold(provider);
  if (!hold || now < hold.until) return hold;
  if (hold.scope === "disk") return null;
  try {
    await provider.embed([FINGERPRINT_PROBE], "document", { timeoutMs: workerRequestTimeoutMs(), signal });
  } catch (e) {
    if (failureScopeOf(e) === "provider") {
      await recordProviderOutcome({ ok: false, error: (e as Error).message });
      return openHold({ scope: "provider", provider, error: holdErrorText({ scope: "provider", error: e }), minDelayMs: retryAfterMs(e), now });
    }
  }
  await recordProviderOutcome({ ok: true });
  closeHold({ scope: "provider", provider });
  noteProbeOk({ provider, now });
  log("info", "embedding provider answers again; the embed queue resumes", { heldSince: hold.since, probes: hold.failures });
  return null;
}

const retryAfterMs = (e: unknown) => (e instanceof EmbeddingError ? (e.retryAfterSeconds ?? 0) * 1000 : 0);

export type BatchEmbedding = {
  vectors: Map<string, Float32Array>;
  /** Texts refused for themselves (or failing right after a passed probe): their items spend an attempt. */
  refused: Map<string, { error: string; retryable: boolean }>;
  /** Set when the provider could not answer: every text without a vector or refusal is handed back, attempts untouched. */
  hold: QueueHold | null;
  /** Texts sent to the provider (a text sent alone after its batch was refused counts again). */
  sent: number;
};

/**
 * Embed a batch's distinct texts in one request, waiting up to the worker's
 * timeout (a slow provider is waited for, not sent the batch again). A batch
 * refused for one input is retried one text per request, so only the
 * refused input is charged.
 */
export async function embedBatchTexts({ provider, texts, dimension, signal }: { provider: EmbeddingProvider; texts: string[]; dimension: number; signal?: AbortSignal }): Promise<BatchEmbedding> {
  const out: BatchEmbedding = { vectors: new Map(), refused: new Map(), hold: null, sent: 0 };
  const afterProbe = takeProbeOk(provider);
  const timeoutMs = workerRequestTimeoutMs();
  const call = async (input: string[]) => {
    out.sent += input.length;
    const vs = await provider.embed(input, "document", { timeoutMs, signal });
    if (vs.length !== input.length) throw new EmbeddingError("bad_response", `provider returned ${vs.length} vectors for ${input.length} texts`);
    const wrong = vs.find((v) => v.length !== dimension);
    if (wrong) throw new EmbeddingError("dimension_mismatch", `provider returned a ${wrong.length}-dimension vector; the model has ${dimension}`);
    input.forEach((t, i) => out.vectors.set(t, vs[i]));
  };
  /** Sort one failure; returns false when the queue must be held (stop sending). */
  const sort = async (e: unknown, input: string[]): Promise<boolean> => {
    const err = e instanceof EmbeddingError ? e : new EmbeddingError("server", (e as Error).message);
    if (failureScopeOf(err) === "provider" && !afterProbe) {
      if (isProviderDownError(err)) await recordProviderOutcome({ ok: false, error: err.message });
      out.hold = openHold({ scope: "provider", provider, error: holdErrorText({ scope: "provider", error: err }), minDelayMs: retryAfterMs(err) });
      return false;
    }
    // The provider is up (it answered, or just passed the probe): this failure belongs to these inputs.
    for (const t of input) out.refused.set(t, { error: `${err.kind}: ${err.message}`, retryable: failureScopeOf(err) === "provider" });
    return true;
  };
  try {
    await call(texts);
  } catch (e) {
    if (failureScopeOf(e) !== "item" || texts.length === 1) {
      await sort(e, texts);
      return out;
    }
    for (const t of texts) {
      try {
        await call([t]);
      } catch (single) {
        if (!(await sort(single, [t]))) return out;
      }
    }
  }
  if (out.vectors.size > 0) {
    await recordProviderOutcome({ ok: true });
    closeHold({ scope: "provider", provider });
  }
  return out;
}

/** What a batch's embedding means for each item: its vector, a charged refusal (grouped by error), or a hold. */
export function splitBatchOutcome<I extends { id: number }>({ misses, got }: { misses: { item: I; text: string }[]; got: BatchEmbedding }) {
  const vectors = new Map<number, Float32Array>();
  const refused = new Map<string, { error: string; retryable: boolean; items: I[] }>();
  const held: I[] = [];
  for (const m of misses) {
    const v = got.vectors.get(m.text);
    const r = got.refused.get(m.text);
    if (v) vectors.set(m.item.id, v);
    else if (!r) held.push(m.item);
    else if (refused.has(r.error)) refused.get(r.error)!.items.push(m.item);
    else refused.set(r.error, { ...r, items: [m.item] });
  }
  return { vectors, refused: [...refused.values()], held };
}
