import { expect, it } from "vitest";
import { api, RELIABILITY_TOKEN, type RunningServer } from "../fixtures/next-server";

/**
 * The store API's assertions, one body for both backends: each backend's
 * suite starts two app servers (replicas) on one data store — two
 * `next start` on one PostgreSQL database, or on one DATA_DIR for SQLite —
 * and registers these cases with storeApiCases(). What one replica writes,
 * the other serves. A route joins both backends by adding its case here.
 */
export type StoreApiTarget = {
  /** Two servers on the same data. */
  a: () => RunningServer;
  b: () => RunningServer;
  /** Counts answers ≥ 500 other than 501 (and network failures): none is expected. */
  serverErrors: { n: number };
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
export type Answer = { status: number; json: any };

export async function callApi(target: StoreApiTarget, server: RunningServer, method: string, path: string, opts: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const r = await api(server.url, method, path, opts);
  // 501 not_implemented is an answer (asserted where it is expected), not a fault.
  if ((r.status >= 500 && r.status !== 501) || r.status === 0) target.serverErrors.n++;
  return r as Answer;
}

/** One MCP tools/call; the result (or the REST error envelope when isError). */
export async function callTool(server: RunningServer, token: string, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/api/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, accept: "application/json, text/event-stream", "content-type": "application/json", connection: "close" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  const text = await res.text();
  const rpc = JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))!.slice(6)) as { result: { isError?: boolean; content: { text: string }[] } };
  return { isError: rpc.result.isError === true, json: JSON.parse(rpc.result.content[0].text) as Record<string, unknown> };
}

/** The tokens the cases use, made through the API (admin bootstrap token) by the first case. */
export type StoreApiTokens = { writer: string; alphaOnly: string };

export function storeApiCases(target: StoreApiTarget): { tokens: StoreApiTokens } {
  const tokens = {} as StoreApiTokens;
  const call = (server: RunningServer, method: string, path: string, opts: { token?: string; body?: unknown } = {}) => callApi(target, server, method, path, opts);
  const { a, b } = target;

  it("creates stores on one replica and lists and describes them on the other; a fresh install has core and default", async () => {
    const made = await call(a(), "POST", "/tokens", { token: RELIABILITY_TOKEN, body: { label: "writer", agent_id: "writer", scopes: ["read", "write"] } });
    expect(made.status).toBe(201);
    tokens.writer = made.json.token;
    for (const name of ["alpha", "beta"]) expect((await call(a(), "POST", "/stores", { token: tokens.writer, body: { name, description: `${name} notes` } })).status).toBe(201);
    const scoped = await call(b(), "POST", "/tokens", { token: RELIABILITY_TOKEN, body: { label: "alpha only", agent_id: "alpha-agent", scopes: ["read", "write"], stores: ["alpha"] } });
    expect(scoped.status).toBe(201);
    tokens.alphaOnly = scoped.json.token;

    const listed = await call(b(), "GET", "/stores", { token: tokens.writer });
    expect(listed.status).toBe(200);
    expect(listed.json.stores.map((s: { name: string }) => s.name)).toEqual(expect.arrayContaining(["core", "default", "alpha", "beta"]));
    const described = await call(b(), "GET", "/stores/alpha", { token: tokens.writer });
    expect(described.json).toMatchObject({ name: "alpha", description: "alpha notes" });
    // Two replicas creating the same store: one wins, the other is told it exists.
    expect((await call(b(), "POST", "/stores", { token: tokens.writer, body: { name: "alpha" } })).json.error.code).toBe("conflict");
  });

  it("answers bad input with 400, an unknown store with 404, in the one error envelope", async () => {
    const unknown = await call(a(), "GET", "/stores/nowhere/documents", { token: tokens.writer });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ code: "not_found" });
    expect((await call(b(), "GET", "/stores/nowhere/search?q=x", { token: tokens.writer })).status).toBe(404);
    const badName = await call(a(), "GET", "/stores/Not%20A%20Store", { token: tokens.writer });
    expect(badName.status).toBe(400);
    const emptyQuery = await call(a(), "POST", "/stores/alpha/search", { token: tokens.writer, body: { q: "" } });
    expect(emptyQuery.status).toBe(400);
    expect(emptyQuery.json.error.code).toBe("invalid_request");
    const badBody = await call(b(), "PUT", "/stores/alpha/documents", { token: tokens.writer, body: { documents: "not a list" } });
    expect(badBody.status).toBe(400);
    const badMemory = await call(a(), "POST", "/stores/alpha/memories", { token: tokens.writer, body: { path: "../escape", body: "x" } });
    expect(badMemory.status).toBe(400);
  });

  it("finds a document put through one replica with a search through the other, reads its chunk, and forgets it when deleted", async () => {
    const put = await call(a(), "PUT", "/stores/alpha/documents", {
      token: tokens.writer,
      body: { documents: [{ path: "runbooks/pager.md", content: "# Pager\n\nWhen the zanzibar queue backs up, restart the ingest relay.\n" }, { path: "runbooks/other.md", content: "Nothing to see here." }] },
    });
    expect(put.status).toBe(200);
    expect(put.json.documents.map((d: { status: string }) => d.status)).toEqual(["added", "added"]);

    const listed = await call(b(), "GET", "/stores/alpha/documents?prefix=runbooks/", { token: tokens.writer });
    expect(listed.json.total).toBe(2);
    expect(listed.json.documents.map((d: { path: string }) => d.path)).toEqual(["runbooks/other.md", "runbooks/pager.md"]);

    const found = await call(b(), "GET", "/stores/alpha/search?mode=fts&q=zanzibar", { token: tokens.writer });
    expect(found.status).toBe(200);
    expect(found.json.results.map((r: { path: string }) => r.path)).toEqual(["runbooks/pager.md"]);
    const chunk = await call(a(), "GET", `/stores/alpha/chunks/${found.json.results[0].chunk_id}`, { token: tokens.writer });
    expect(chunk.json.text).toContain("zanzibar queue");

    const viaTool = await callTool(a(), tokens.writer, "search", { store: "alpha", q: "zanzibar", mode: "fts" });
    expect(viaTool.isError).toBe(false);
    expect((viaTool.json.results as { path: string }[]).map((r) => r.path)).toEqual(["runbooks/pager.md"]);

    // Another store does not see it.
    expect((await call(a(), "GET", "/stores/beta/search?mode=fts&q=zanzibar", { token: tokens.writer })).json.results).toEqual([]);

    expect((await call(a(), "DELETE", "/stores/alpha/documents?path=runbooks/other.md", { token: tokens.writer })).status).toBe(200);
    const gone = await call(b(), "GET", "/stores/alpha/documents?prefix=runbooks/", { token: tokens.writer });
    expect(gone.json.total).toBe(1);
    expect((await call(b(), "DELETE", "/stores/alpha/documents?path=runbooks/other.md", { token: tokens.writer })).status).toBe(404);
  });

  it("keeps memories written on one replica readable, searchable, editable and deletable on the other", async () => {
    const created = await call(a(), "POST", "/stores/alpha/memories", { token: tokens.writer, body: { path: "ops/oncall/handover", body: "Hand over the quetzal pager at nine.", tags: ["oncall"] } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ path: "ops/oncall/handover", category: "ops/oncall", tags: ["oncall"] });
    expect(created.json.body).toContain("quetzal pager");

    const read = await call(b(), "GET", "/stores/alpha/memories?path=ops/oncall/handover", { token: tokens.writer });
    expect(read.json.body).toContain("Hand over the quetzal pager at nine.");
    const listed = await call(b(), "GET", "/stores/alpha/memories?category=ops&tags=oncall", { token: tokens.writer });
    expect(listed.json.memories.map((m: { path: string }) => m.path)).toEqual(["ops/oncall/handover"]);
    const categories = await call(a(), "GET", "/stores/alpha/categories?parent=ops", { token: tokens.writer });
    expect(categories.json.categories).toMatchObject([{ path: "ops/oncall", memories: 1 }]);
    const found = await call(a(), "GET", "/stores/alpha/search?mode=fts&q=quetzal", { token: tokens.writer });
    expect(found.json.results.map((r: { path: string }) => r.path)).toEqual(["memory/ops/oncall/handover.md"]);

    const updated = await call(b(), "PUT", "/stores/alpha/memories", { token: tokens.writer, body: { path: "ops/oncall/handover", body: "Hand over the axolotl pager at ten." } });
    expect(updated.status).toBe(200);
    expect((await call(a(), "GET", "/stores/alpha/search?mode=fts&q=quetzal", { token: tokens.writer })).json.results).toEqual([]);
    expect((await callTool(a(), tokens.writer, "read_memory", { store: "alpha", path: "ops/oncall/handover" })).json.body).toContain("axolotl");

    expect((await call(a(), "POST", "/stores/alpha/memories", { token: tokens.writer, body: { path: "ops/oncall/handover", body: "again" } })).status).toBe(409);
    expect((await call(b(), "DELETE", "/stores/alpha/memories?path=ops/oncall/handover", { token: tokens.writer })).status).toBe(200);
    expect((await call(a(), "GET", "/stores/alpha/memories?path=ops/oncall/handover", { token: tokens.writer })).status).toBe(404);
  });

  it("verifies a store and reindexes it as an admin job, visible from either replica", async () => {
    expect((await call(a(), "POST", "/stores/alpha/memories", { token: tokens.writer, body: { path: "notes/kept", body: "A memory that survives a reindex." } })).status).toBe(201);
    const verified = await call(b(), "GET", "/stores/alpha/verify", { token: tokens.writer });
    expect(verified.status).toBe(200);
    expect(verified.json).toMatchObject({ store: "alpha", ok: true, not_indexed: [], hash_mismatches: [] });

    expect((await call(a(), "POST", "/stores/alpha/reindex", { token: tokens.writer })).status).toBe(403);
    const started = await call(a(), "POST", "/stores/alpha/reindex", { token: RELIABILITY_TOKEN });
    expect(started.status).toBe(202);
    let job = started.json.job;
    for (const until = Date.now() + 90_000; Date.now() < until && job.status === "running"; ) {
      await new Promise((r) => setTimeout(r, 200));
      job = (await call(b(), "GET", `/jobs/${job.id}`, { token: RELIABILITY_TOKEN })).json.job;
    }
    expect(job).toMatchObject({ status: "succeeded", store: "alpha" });
    expect(job.result.by_kind.memories.scanned).toBeGreaterThanOrEqual(1);
    expect((await call(b(), "GET", "/stores/alpha/search?mode=fts&q=survives", { token: tokens.writer })).json.results.map((r: { path: string }) => r.path)).toEqual(["memory/notes/kept.md"]);
  });

  it("records traces and learnings through one replica and recalls them through the other, with the reflection settings both serve", async () => {
    const failure = { intent: { verb: "restart", target: "ingest relay" }, shard_type: "ops", key_files: ["relay/lease.ts"], outcome: "failure", key_issue: "the relay lost its lease to a zombie worker", error_tags: ["lease"] };
    const recorded = await call(a(), "POST", "/stores/alpha/traces", { token: tokens.writer, body: failure });
    expect(recorded.status).toBe(201);
    expect(recorded.json).toMatchObject({ deduped: false, embedding: "queued", trace: { agent_id: "writer", outcome: "failure", intent: failure.intent, key_files: ["relay/lease.ts"], seen_count: 1, embedding: "pending", vector: null } });
    const id = recorded.json.trace.id;
    const again = await call(b(), "POST", "/stores/alpha/traces", { token: tokens.writer, body: failure });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ deduped: true, embedding: "unchanged", trace: { id, seen_count: 2 } });
    expect((await call(b(), "GET", `/stores/alpha/traces/${id}`, { token: tokens.writer })).json.trace).toMatchObject({ id, summary_descriptor: recorded.json.trace.summary_descriptor });
    expect((await call(a(), "GET", "/stores/alpha/traces/999999", { token: tokens.writer })).status).toBe(404);
    const listed = await call(b(), "GET", "/stores/alpha/traces?outcome=failure&shard_type=ops", { token: tokens.writer });
    expect(listed.json).toMatchObject({ total: 1, traces: [{ id }] });
    expect((await call(b(), "POST", "/stores/alpha/traces", { token: tokens.writer, body: { intent: failure.intent, outcome: "failure" } })).status).toBe(400);

    const learned = await call(a(), "POST", "/stores/alpha/learnings", { token: tokens.writer, body: { predicate: "prefers", args: { restart: "drain first" }, description: "Drain the relay before a restart", confidence: 0.8 } });
    expect(learned.status).toBe(201);
    expect(learned.json).toMatchObject({ deduped: false, learning: { predicate: "prefers", args: { restart: "drain first" }, confidence: 0.8 } });
    expect((await call(b(), "GET", `/stores/alpha/learnings/${learned.json.learning.id}`, { token: tokens.writer })).json.learning.description).toBe("Drain the relay before a restart");
    expect((await call(b(), "GET", "/stores/alpha/learnings?predicate=prefers", { token: tokens.writer })).json.total).toBe(1);

    // No embed worker runs here: what was just written is recalled by its words at once, on either backend.
    const recalled = await call(b(), "POST", "/stores/alpha/recall", { token: tokens.writer, body: { query: "restarting the ingest relay lease", min_score: 0.1 } });
    expect(recalled.status).toBe(200);
    expect(recalled.json.traces.map((t: { id: number }) => t.id)).toEqual([id]);
    expect(recalled.json.traces[0]).toMatchObject({ match: "lexical", outcome: "failure" });
    expect(recalled.json.guidance.past_failure_warning).toMatchObject({ trace_id: id, intent: failure.intent });
    expect(recalled.json.learnings.map((l: { predicate: string }) => l.predicate)).toEqual(["prefers"]);
    expect(recalled.json.event_id).toEqual(expect.any(Number));
    const viaTool = await callTool(a(), tokens.writer, "recall", { store: "alpha", intent: { verb: "restart", target: "ingest relay" }, kinds: ["trace"] });
    expect(viaTool.isError).toBe(false);
    expect((viaTool.json.traces as { id: number }[]).map((t) => t.id)).toEqual([id]);
    expect((await callTool(b(), tokens.writer, "record_learning", { store: "alpha", predicate: "avoids", description: "Friday relay restarts" })).json).toMatchObject({ deduped: false });
    expect((await call(a(), "POST", "/stores/beta/recall", { token: tokens.writer, body: { query: "ingest relay lease" } })).json).toMatchObject({ traces: [], reason: { code: "store_empty" } });

    expect((await call(a(), "PUT", "/stores/alpha/reflection", { token: tokens.writer, body: { settings: { top_k: 2 } } })).status).toBe(403);
    const put = await call(a(), "PUT", "/stores/alpha/reflection", { token: RELIABILITY_TOKEN, body: { settings: { top_k: 2, retention: { strategy: "newest" } }, reason: "shared settings" } });
    expect(put.status).toBe(200);
    expect(put.json.settings).toMatchObject({ top_k: 2, retention: { strategy: "newest", ttl_days: null } });
    const overview = await call(b(), "GET", "/stores/alpha/reflection", { token: tokens.writer });
    expect(overview.json).toMatchObject({ store: "alpha", settings: { top_k: 2 }, counts: { traces: 1, failures: 1, learnings: 2 } });
    expect(overview.json.totals.recalls).toBeGreaterThanOrEqual(2);
    expect((await call(b(), "PUT", "/stores/alpha/reflection", { token: RELIABILITY_TOKEN, body: { settings: { top_k: 0 } } })).status).toBe(400);
    expect(target.serverErrors.n).toBe(0);
  });

  it("keeps thoughts, chains, the knowledge graph and working memory written on one replica readable, findable and deletable on the other", async () => {
    const opts = (body?: unknown) => ({ token: tokens.writer, body });
    const first = await call(a(), "POST", "/stores/alpha/thoughts", opts({ content: "The kestrel cache warms up at dawn.", chain_id: "warmup", tags: ["cache"] }));
    expect(first.status).toBe(201);
    expect(first.json.thought).toMatchObject({ chain_id: "warmup", thought_number: 1, tags: ["cache"], created_by: "agent:writer" });
    const second = await callTool(b(), tokens.writer, "think", { store: "alpha", content: "Warming took nine minutes.", chain_id: "warmup", framework: "debug" });
    expect(second.isError).toBe(false);
    expect(second.json.thought).toMatchObject({ thought_number: 2, framework: "debug" });
    expect((await call(a(), "POST", "/stores/alpha/thoughts", opts({ content: "again", chain_id: "warmup", thought_number: 2 }))).json.error.code).toBe("conflict");
    const found = await call(b(), "GET", "/stores/alpha/thoughts?q=kestrels", opts());
    expect(found.json).toMatchObject({ total: 1, thoughts: [{ id: first.json.thought.id }] });
    const chain = await call(a(), "GET", "/stores/alpha/chains/warmup", opts());
    expect(chain.json.chain).toMatchObject({ id: "warmup", thought_count: 2 });
    expect(chain.json.chain.thoughts.map((t: { thought_number: number }) => t.thought_number)).toEqual([1, 2]);
    expect((await call(b(), "GET", "/stores/alpha/chains", opts())).json.chains.map((c: { id: string }) => c.id)).toEqual(["warmup"]);
    expect((await call(b(), "POST", `/stores/alpha/thoughts/${first.json.thought.id}/feedback`, opts({ utility: 1 }))).json.thought).toMatchObject({ utility: 1, feedback_count: 1 });

    const cache = await call(a(), "POST", "/stores/alpha/nodes", opts({ name: "Kestrel Cache", entity_type: "system", tags: ["edge"] }));
    expect(cache.status).toBe(201);
    expect((await call(b(), "POST", "/stores/alpha/nodes", opts({ name: "kestrel  cache", entity_type: "system" }))).status).toBe(409);
    const job = await callTool(b(), tokens.writer, "node_create", { store: "alpha", name: "Warmup Job", entity_type: "tool" });
    const jobId = (job.json.node as { id: string }).id;
    expect((await call(b(), "GET", "/stores/alpha/nodes?q=kestrel", opts())).json.nodes.map((n: { id: string }) => n.id)).toEqual([cache.json.node.id]);
    expect((await call(a(), "PATCH", `/stores/alpha/nodes/${cache.json.node.id}`, opts({ scope: "prod" }))).json.node).toMatchObject({ scope: "prod", tags: ["edge"] });

    const relation = await call(b(), "POST", "/stores/alpha/relations", opts({ from_id: jobId, to_id: cache.json.node.id, relationship_type: "warms", weight: 0.4 }));
    expect(relation.status).toBe(201);
    const merged = await call(a(), "POST", "/stores/alpha/relations", opts({ from_id: jobId, to_id: cache.json.node.id, relationship_type: "warms", weight: 0.8 }));
    expect(merged.status).toBe(200);
    expect(merged.json).toMatchObject({ merged: true, relation: { id: relation.json.relation.id, weight: 0.8 } });
    expect((await call(b(), "PATCH", `/stores/alpha/relations/${relation.json.relation.id}`, opts({ confidence: 0.9 }))).json.relation).toMatchObject({ confidence: 0.9 });
    const frame = await call(a(), "POST", "/stores/alpha/frames", opts({ node_id: cache.json.node.id, column: "procedural", properties: { warm: "curl /warm" } }));
    expect(frame.status).toBe(201);
    expect((await call(b(), "PATCH", `/stores/alpha/frames/${frame.json.frame.id}`, opts({ properties: { warm: "make warm" } }))).json.frame.properties).toEqual({ warm: "make warm" });
    const link = { target: "frame", target_id: frame.json.frame.id, thought_id: first.json.thought.id };
    expect((await call(b(), "POST", "/stores/alpha/evidence", opts(link))).status).toBe(201);
    const relinked = await call(a(), "POST", "/stores/alpha/evidence", opts({ ...link, stance: "contradicts" }));
    expect(relinked.status).toBe(200);
    expect(relinked.json).toMatchObject({ created: false, evidence: { stance: "contradicts" } });
    expect((await call(b(), "GET", `/stores/alpha/evidence?target=frame&target_id=${frame.json.frame.id}`, opts())).json.evidence).toEqual([{ thought_id: first.json.thought.id, stance: "contradicts" }]);

    const detail = await call(b(), "GET", `/stores/alpha/nodes/${cache.json.node.id}`, opts());
    expect(detail.json.frames).toMatchObject([{ id: frame.json.frame.id, evidence: [{ thought_id: first.json.thought.id, excerpt: "The kestrel cache warms up at dawn." }] }]);
    expect(detail.json.incoming).toMatchObject([{ id: relation.json.relation.id, other: { id: jobId, display_name: "Warmup Job", entity_type: "tool" } }]);
    expect((await callTool(a(), tokens.writer, "node_get", { store: "alpha", id: jobId })).json).toMatchObject({ outgoing: [{ id: relation.json.relation.id }] });

    const wm = await call(a(), "PUT", "/stores/alpha/working-memory", opts({ key: "warmup.state", value: { phase: 2 }, ttl_seconds: 600 }));
    expect(wm.status).toBe(200);
    expect((await call(b(), "GET", "/stores/alpha/working-memory/warmup.state", opts())).json.entry).toMatchObject({ key: "warmup.state", value: { phase: 2 }, updated_by: "agent:writer" });
    expect((await call(b(), "GET", "/stores/alpha/working-memory", opts())).json.entries.map((e: { key: string }) => e.key)).toEqual(["warmup.state"]);
    expect((await call(b(), "DELETE", "/stores/alpha/working-memory/warmup.state", opts())).status).toBe(200);
    expect((await call(a(), "GET", "/stores/alpha/working-memory/warmup.state", opts())).status).toBe(404);

    // Deletes cascade: the node takes its frame, relation and the evidence link; the thought leaves its chain.
    expect((await call(a(), "DELETE", `/stores/alpha/nodes/${cache.json.node.id}`, opts())).json).toEqual({ deleted: cache.json.node.id, frames: 1, relations: 1 });
    expect((await call(b(), "GET", `/stores/alpha/relations/${relation.json.relation.id}`, opts())).status).toBe(404);
    expect((await call(b(), "GET", `/stores/alpha/evidence?target=frame&target_id=${frame.json.frame.id}`, opts())).status).toBe(404);
    expect((await call(b(), "DELETE", `/stores/alpha/thoughts/${first.json.thought.id}`, opts())).status).toBe(200);
    expect((await call(a(), "GET", `/stores/alpha/thoughts/${first.json.thought.id}`, opts())).status).toBe(404);
    expect((await call(a(), "GET", "/stores/alpha/chains/warmup", opts())).json.chain.thought_count).toBe(1);
    // Another store does not see them.
    expect((await call(a(), "GET", "/stores/beta/thoughts?q=warming", opts())).json.total).toBe(0);
    expect(target.serverErrors.n).toBe(0);
  });

  it("keeps a store-scoped token to its store through every ported route and tool: not another store, not core", async () => {
    const t = tokens.alphaOnly;
    expect((await call(a(), "GET", "/stores/alpha/search?mode=fts&q=zanzibar", { token: t })).json.results).toHaveLength(1);
    expect((await call(b(), "GET", "/stores", { token: t })).json.stores.map((s: { name: string }) => s.name)).toEqual(["alpha"]);
    for (const [method, path, body] of [
      ["GET", "/stores/beta", undefined],
      ["GET", "/stores/core/documents", undefined],
      ["PUT", "/stores/beta/documents", { path: "x.md", content: "x" }],
      ["GET", "/stores/beta/search?q=zanzibar", undefined],
      ["GET", "/stores/alpha/search?q=zanzibar&include_core=true", undefined],
      ["POST", "/stores/alpha/search", { q: "zanzibar", include_core: true }],
      ["GET", "/stores/beta/memories", undefined],
      ["GET", "/stores/core/categories", undefined],
      ["GET", "/stores/beta/verify", undefined],
      ["POST", "/stores/beta/traces", { intent: { verb: "x", target: "y" }, shard_type: "z", outcome: "success" }],
      ["GET", "/stores/core/traces", undefined],
      ["POST", "/stores/beta/recall", { query: "relay" }],
      ["GET", "/stores/beta/reflection", undefined],
      ["POST", "/stores", { name: "gamma" }],
      ["POST", "/stores/beta/thoughts", { content: "x" }],
      ["GET", "/stores/core/nodes", undefined],
      ["PUT", "/stores/beta/working-memory", { key: "k", value: 1 }],
      ["GET", "/stores/core/chains", undefined],
    ] as const) {
      const r = await call(a(), method, path, { token: t, body });
      expect([path, r.status]).toEqual([path, 403]);
    }
    const tool = await callTool(b(), t, "search", { store: "beta", q: "zanzibar" });
    expect(tool.isError).toBe(true);
    expect(tool.json).toMatchObject({ error: { code: "forbidden" } });
    expect((await callTool(b(), t, "read_memory", { store: "core", path: "notes/kept" })).json).toMatchObject({ error: { code: "forbidden" } });
    expect((await callTool(a(), t, "record_trace", { store: "beta", intent: { verb: "x", target: "y" }, shard_type: "z", outcome: "success" })).json).toMatchObject({ error: { code: "forbidden" } });
    expect((await callTool(a(), t, "node_create", { store: "beta", name: "x", entity_type: "concept" })).json).toMatchObject({ error: { code: "forbidden" } });
    expect(target.serverErrors.n).toBe(0);
  });

  return { tokens };
}
