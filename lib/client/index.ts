/**
 * Typed client for the dualmind HTTP API: fetch only, no server code. Types
 * come from the server's zod schemas through type-only imports, which vanish
 * at compile time, so this file runs anywhere fetch does: inputs from the
 * routes' input schemas, answers from their declared response schemas (the
 * snake_case wire form every answer is checked against in tests).
 */
import type { z } from "zod";
import type { errorEnvelopeSchema } from "../api/contract";
import type { messagePostedResponse, sessionCreatedResponse, sessionView } from "../api/responses/dialectic";
import type { chunkDetail, memoryListResponse, memoryWithBody, searchResponse } from "../api/responses/documents";
import type { storeHealthResponse } from "../api/responses/embeddings";
import type { rememberResponse, thoughtResponse } from "../api/responses/graph";
import type { runFinishedResponse, runRecordedResponse, taskCreatedResponse, taskStatusResponse, validationRecordedResponse } from "../api/responses/ledger";
import type { learningRecordedResponse, recallResponse, traceRecordedResponse } from "../api/responses/recall";
import type { healthResponse, storeLifecycleResponse, storeListResponse, storeSummary } from "../api/responses/stores";
import type { createSessionSchema, postMessageSchema } from "../governance/dialectic";
import type { createTaskSchema, finishRunSchema, recordValidationSchema, startRunSchema } from "../governance/ledger";
import type { rememberInputSchema } from "../graph/remember";
import type { thinkInputSchema } from "../graph/thoughts";
import type { createMemorySchema, memoryFilterSchema, updateMemorySchema } from "../index/memories";
import type { searchInputSchema } from "../index/search";
import type { learningInputSchema, traceInputSchema } from "../recall/descriptors";
import type { recallInputSchema } from "../recall/recall";

/** The answer of a route, as the wire carries it. */
type Answer<S extends z.ZodType> = z.output<S>;

export type ApiErrorBody = z.output<typeof errorEnvelopeSchema>;

/** A non-2xx answer, with the envelope's stable code. */
export class DualmindApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ApiErrorBody["error"]["details"] = [],
  ) {
    super(message);
    this.name = "DualmindApiError";
  }
}

type Query = Record<string, string | number | boolean | string[] | undefined>;

export type DualmindClientOptions = { baseUrl: string; token: string; fetch?: typeof fetch };

export class DualmindClient {
  private readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchImpl: typeof fetch;

  constructor({ baseUrl, token, fetch: fetchImpl }: DualmindClientOptions) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.fetchImpl = fetchImpl ?? fetch;
  }

  /** One API call: JSON in, JSON out, errors as DualmindApiError. */
  async request<T>(method: string, path: string, { query, body }: { query?: Query; body?: unknown } = {}): Promise<T> {
    const url = new URL(`${this.baseUrl}/api/v1${path}`);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined) continue;
      if (Array.isArray(v)) v.forEach((item) => url.searchParams.append(k, item));
      else url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await this.fetchImpl(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const json: unknown = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const env = (json as Partial<ApiErrorBody> | null)?.error;
      throw new DualmindApiError(res.status, env?.code ?? "http_error", env?.message ?? `HTTP ${res.status}`, env?.details ?? []);
    }
    return json as T;
  }

  private store(store: string): string {
    return `/stores/${encodeURIComponent(store)}`;
  }

  health() {
    return this.request<Answer<typeof healthResponse>>("GET", "/health");
  }

  openapi() {
    return this.request<{ openapi: string; paths: Record<string, unknown> }>("GET", "/openapi.json");
  }

  listStores() {
    return this.request<Answer<typeof storeListResponse>>("GET", "/stores");
  }

  createStore(input: { name: string; description?: string }) {
    return this.request<Answer<typeof storeSummary>>("POST", "/stores", { body: input });
  }

  /** Admin: for good; the name is sent twice (`confirm`), as the API requires. */
  deleteStore(store: string) {
    return this.request<{ deleted: string }>("DELETE", this.store(store), { query: { confirm: store } });
  }

  /** Admin: read-only until unarchived (writes answer 409 store_archived). */
  archiveStore(store: string) {
    return this.request<Answer<typeof storeLifecycleResponse>>("POST", `${this.store(store)}/archive`);
  }

  unarchiveStore(store: string) {
    return this.request<Answer<typeof storeLifecycleResponse>>("POST", `${this.store(store)}/unarchive`);
  }

  search(store: string, input: z.input<typeof searchInputSchema>) {
    return this.request<Answer<typeof searchResponse>>("POST", `${this.store(store)}/search`, { body: input });
  }

  readChunk(store: string, chunkId: string) {
    return this.request<Answer<typeof chunkDetail>>("GET", `${this.store(store)}/chunks/${encodeURIComponent(chunkId)}`);
  }

  writeMemory(store: string, input: z.input<typeof createMemorySchema>) {
    return this.request<Answer<typeof memoryWithBody>>("POST", `${this.store(store)}/memories`, { body: input });
  }

  updateMemory(store: string, input: z.input<typeof updateMemorySchema>) {
    return this.request<Answer<typeof memoryWithBody>>("PUT", `${this.store(store)}/memories`, { body: input });
  }

  readMemory(store: string, path: string) {
    return this.request<Answer<typeof memoryWithBody>>("GET", `${this.store(store)}/memories`, { query: { path } });
  }

  queryMemories(store: string, filter: z.input<typeof memoryFilterSchema> = {}) {
    const query: Query = {};
    for (const [k, v] of Object.entries(filter)) query[k] = v instanceof Date ? v.toISOString() : (v as Query[string]);
    return this.request<Answer<typeof memoryListResponse>>("GET", `${this.store(store)}/memories`, { query });
  }

  deleteMemory(store: string, path: string) {
    return this.request<{ deleted: string }>("DELETE", `${this.store(store)}/memories`, { query: { path } });
  }

  think(store: string, input: z.input<typeof thinkInputSchema>) {
    return this.request<Answer<typeof thoughtResponse>>("POST", `${this.store(store)}/thoughts`, { body: input });
  }

  remember(store: string, input: z.input<typeof rememberInputSchema>) {
    return this.request<Answer<typeof rememberResponse>>("POST", `${this.store(store)}/remember`, { body: input });
  }

  recordTrace(store: string, input: z.input<typeof traceInputSchema>) {
    return this.request<Answer<typeof traceRecordedResponse>>("POST", `${this.store(store)}/traces`, { body: input });
  }

  recordLearning(store: string, input: z.input<typeof learningInputSchema>) {
    return this.request<Answer<typeof learningRecordedResponse>>("POST", `${this.store(store)}/learnings`, { body: input });
  }

  recall(store: string, input: z.input<typeof recallInputSchema>) {
    return this.request<Answer<typeof recallResponse>>("POST", `${this.store(store)}/recall`, { body: input });
  }

  storeHealth(store: string) {
    return this.request<Answer<typeof storeHealthResponse>>("GET", `${this.store(store)}/health`);
  }

  createTask(input: z.input<typeof createTaskSchema>) {
    return this.request<Answer<typeof taskCreatedResponse>>("POST", "/tasks", { body: input });
  }

  taskStatus(taskId: string) {
    return this.request<Answer<typeof taskStatusResponse>>("GET", `/tasks/${encodeURIComponent(taskId)}`);
  }

  recordRun(taskId: string, input: z.input<typeof startRunSchema>) {
    return this.request<Answer<typeof runRecordedResponse>>("POST", `/tasks/${encodeURIComponent(taskId)}/runs`, { body: input });
  }

  finishRun(taskId: string, runId: string, input: z.input<typeof finishRunSchema>) {
    return this.request<Answer<typeof runFinishedResponse>>("POST", `/tasks/${encodeURIComponent(taskId)}/runs/${encodeURIComponent(runId)}/finish`, { body: input });
  }

  recordValidation(taskId: string, input: z.input<typeof recordValidationSchema>) {
    return this.request<Answer<typeof validationRecordedResponse>>("POST", `/tasks/${encodeURIComponent(taskId)}/validations`, { body: input });
  }

  dialecticRequest(input: z.input<typeof createSessionSchema>) {
    return this.request<Answer<typeof sessionCreatedResponse>>("POST", "/dialectic/sessions", { body: input });
  }

  dialecticPost(sessionId: string, input: z.input<typeof postMessageSchema>) {
    return this.request<Answer<typeof messagePostedResponse>>("POST", `/dialectic/sessions/${encodeURIComponent(sessionId)}/messages`, { body: input });
  }

  dialecticGet(sessionId: string) {
    return this.request<Answer<typeof sessionView>>("GET", `/dialectic/sessions/${encodeURIComponent(sessionId)}`);
  }
}
