import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuiltinProvider } from "@/lib/embed/providers/builtin";
import { OpenAICompatibleProvider } from "@/lib/embed/providers/openai";
import { TransformersProvider } from "@/lib/embed/providers/transformers";
import { computeFingerprint, createProvider } from "@/lib/embed/providers";
import { EmbeddingError } from "@/lib/embed/types";
import { parseConfig } from "@/lib/config";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);
const norm = (a: Float32Array) => Math.sqrt(a.reduce((s, x) => s + x * x, 0));

describe("builtin provider", () => {
  const p = new BuiltinProvider();

  it("is deterministic, 384-d and L2-normalized", async () => {
    const [a] = await p.embed(["Fix the authentication bug in login.ts"], "document");
    const [b] = await new BuiltinProvider().embed(["Fix the authentication bug in login.ts"], "document");
    expect(a.length).toBe(384);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(norm(a)).toBeCloseTo(1, 5);
    const [empty] = await p.embed([""], "document");
    expect(norm(empty)).toBeCloseTo(1, 5);
  });

  it("ranks related text above unrelated text (shared stems count)", async () => {
    const [q, related, unrelated] = await p.embed(["authentication failures on login", "the login authenticator failed twice", "photography exposure settings at dusk"], "document");
    expect(cosine(q, related)).toBeGreaterThan(cosine(q, unrelated) + 0.1);
  });

  it("keeps its fingerprint id: the id of a model's vectors in every store is the hash it always was", async () => {
    // Ids computed before the fingerprint's keys were spelled snake_case: the hash is over the values, in a fixed order.
    expect(await computeFingerprint(new BuiltinProvider())).toEqual({
      provider: "builtin",
      model: "dualmind-hash-v1",
      dimension: 384,
      metric: "cosine",
      document_prefix: "",
      query_prefix: "",
      probe_hash: "7fd5a9d3292c88c83830d2bbb90d1b1605862a353789cebc52a76b868fb496b9",
      id: "68f68efaf507bff8",
    });
    const prefixed = await computeFingerprint(new BuiltinProvider({ dimension: 64, documentPrefix: "passage: ", queryPrefix: "query: " }));
    expect(prefixed).toMatchObject({ document_prefix: "passage: ", query_prefix: "query: ", probe_hash: "5081347aa1fa69e2920f3b60266edb4c5462c03f049fd4d0fc8f0cbf3953c7f8", id: "454281a3fcad7399" });
  });

  it("applies query and document prefixes", async () => {
    const withPrefix = new BuiltinProvider({ queryPrefix: "query: ", documentPrefix: "passage: " });
    const [d] = await withPrefix.embed(["hello"], "document");
    const [q] = await withPrefix.embed(["hello"], "query");
    expect(Array.from(d)).not.toEqual(Array.from(q));
  });
});

describe("openai-compatible provider against a local stand-in", () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  beforeAll(async () => {
    fake = await startFakeOpenAI({ dimension: 64 });
  });
  afterAll(() => fake.close());
  const make = (over: Partial<ConstructorParameters<typeof OpenAICompatibleProvider>[0]> = {}) =>
    new OpenAICompatibleProvider({ baseUrl: fake.baseUrl, model: "text-embed-test", apiKey: "sk-test", timeoutMs: 500, batchSize: 3, dimension: 64, ...over });

  it("embeds in batches, sends the key, and keeps input order", async () => {
    fake.state.requests.length = 0;
    const texts = ["one", "two", "three", "four", "five"];
    const vectors = await make().embed(texts, "document");
    expect(vectors).toHaveLength(5);
    expect(fake.state.requests.map((r) => r.input.length)).toEqual([3, 2]);
    expect(fake.state.requests[0].auth).toBe("Bearer sk-test");
    const [expected] = await new BuiltinProvider({ dimension: 64 }).embed(["four"], "document");
    expect(cosine(vectors[3], expected)).toBeCloseTo(1, 5);
  });

  it.each([
    ["429", "rate_limited", true],
    ["500", "server", true],
    ["hang", "timeout", true],
    ["trickle", "timeout", true],
    ["401", "auth", false],
    ["garbage", "bad_response", false],
    ["wrong_count", "bad_response", false],
    ["wrong_dim", "dimension_mismatch", false],
  ] as const)("classifies a %s answer as %s (retryable: %s)", async (mode, kind, retryable) => {
    fake.state.modes.push(mode);
    const err = await make()
      .embed(["x"], "document")
      .then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as EmbeddingError).kind).toBe(kind);
    expect((err as EmbeddingError).retryable).toBe(retryable);
    if (mode === "429") expect((err as EmbeddingError).retryAfterSeconds).toBe(1);
  });

  it("a provider answering without end is refused after a bounded read, not held in memory: a huge vector answer is a bad response, a huge error page a short reason", async () => {
    fake.state.modes.push("huge");
    const huge = await make()
      .embed(["x"], "document")
      .then(() => null, (e: unknown) => e);
    expect((huge as EmbeddingError).kind).toBe("bad_response");
    expect((huge as EmbeddingError).message).toMatch(/answered more than \d+ bytes for 1 texts/);
    fake.state.modes.push("huge_error");
    const page = await make()
      .embed(["x"], "document")
      .then(() => null, (e: unknown) => e);
    expect((page as EmbeddingError).kind).toBe("server");
    expect((page as EmbeddingError).message.length).toBeLessThan(400);
    // The stand-in still answers: the refused streams were let go.
    expect(await make().embed(["y"], "document")).toHaveLength(1);
  });

  it("an unreachable server is a retryable network error", async () => {
    const err = await make({ baseUrl: "http://127.0.0.1:9/v1" })
      .embed(["x"], "document")
      .catch((e: unknown) => e);
    expect((err as EmbeddingError).kind).toBe("network");
  });

  it("fingerprint catches a different model behind the same name", async () => {
    const a = await computeFingerprint(make());
    const again = await computeFingerprint(make());
    expect(again.id).toBe(a.id);
    fake.state.seedText = "swapped model ";
    const b = await computeFingerprint(make());
    fake.state.seedText = "";
    expect(b.model).toBe(a.model);
    expect(b.id).not.toBe(a.id);
  });
});

describe("transformers provider", () => {
  it("a missing local model directory is a clear error, not a crash", async () => {
    const p = new TransformersProvider({ model: "/nonexistent/models/all-MiniLM-L6-v2", allowRemote: false });
    await expect(p.ready()).rejects.toThrow(/model directory not found: \/nonexistent/);
  });

  it("a hub id without remote loading allowed is refused with the setting to change", async () => {
    const p = new TransformersProvider({ model: "Xenova/all-MiniLM-L6-v2", allowRemote: false });
    await expect(p.embed(["x"], "query")).rejects.toThrow(/DUALMIND_TRANSFORMERS_ALLOW_REMOTE/);
  });

  it("config chooses the provider; transformers and openai need a model", () => {
    expect(createProvider(parseConfig({}).embed)).toBeInstanceOf(BuiltinProvider);
    expect(() => parseConfig({ DUALMIND_EMBED_PROVIDER: "openai" })).toThrow(/DUALMIND_EMBED_MODEL/);
    const c = parseConfig({ DUALMIND_EMBED_PROVIDER: "transformers", DUALMIND_EMBED_MODEL: "./models/x" });
    expect(createProvider(c.embed)).toBeInstanceOf(TransformersProvider);
  });
});
