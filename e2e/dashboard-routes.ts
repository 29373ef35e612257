import fs from "node:fs";
import path from "node:path";
import { expect, type APIRequestContext } from "@playwright/test";
import { bootstrapHeaders } from "./fixtures";

/**
 * Every dashboard route of the production build, with real seeded content,
 * for the access and security-header specs. The route list comes from the
 * build (a new page appears by itself); the table below says how to fill a
 * route's dynamic segments and what a signed-in person sees there. A route
 * with no row fails the access spec, so a new page cannot slip by unchecked.
 */

/** Routes of the build, as `next build` writes them (`/(dashboard)/ledger/page` → `/ledger`): pages and route handlers. */
export function listBuiltRoutes(): { route: string; kind: "page" | "handler" }[] {
  const file = path.join(process.cwd(), ".next", "app-path-routes-manifest.json");
  const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, string>;
  return Object.entries(manifest)
    .map(([entry, route]) => ({ route, kind: entry.endsWith("/route") ? ("handler" as const) : ("page" as const) }))
    .sort((a, b) => a.route.localeCompare(b.route));
}

/**
 * Routes that are public or carry no data, and why. `/api/*` has its own
 * bearer auth (and `/api/auth/*` is next-auth), so it is left out by prefix.
 */
export const PUBLIC_ROUTES: Record<string, string> = {
  "/login": "the sign-in page",
  "/_not-found": "Next's built-in 404 page: no data",
  "/_global-error": "Next's built-in error page: no data",
  "/manifest.webmanifest": "the web app manifest (app/manifest.ts): names and icons, no data",
};

export const isPublicRoute = (route: string) => route in PUBLIC_ROUTES || route.startsWith("/api/");

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

/** Unique strings planted in each kind of content: none may ever reach someone who is not signed in. */
export const MARK = {
  store: `gate-${RUN}`,
  storeDescription: `gate-store-description-${RUN}`,
  memory: `gate-memory-body-${RUN}`,
  memoryPath: `gate/secret-${RUN}`,
  trashedMemoryPath: `gate/trashed-${RUN}`,
  thought: `gate-thought-content-${RUN}`,
  node: `gate-node-name-${RUN}`,
  // Words, not one long token: trace text is sanitized and a long letter-and-digit run reads as a secret.
  trace: `gate trace target ${RUN}`,
  learning: `gate learning about ${RUN}`,
  workingMemory: `gate-working-memory-${RUN}`,
  task: `gate-task-intent-${RUN}`,
  session: `gate-session-topic-${RUN}`,
  transcript: `gate-transcript-reasoning-${RUN}`,
  viewer: `gate-viewer-${RUN}`,
};

export const VIEWER_PASSWORD = "gate-viewer-password";

export type Seeded = {
  store: string;
  taskId: string;
  sessionId: string;
  thoughtId: string;
  nodeId: string;
  artifactId: string;
  traceId: number;
  learningId: number;
  recallId: number;
  memoryChunkId: string;
};

/** A concrete request for one route: its URL, who may see it, and strings only someone allowed sees there. */
export type RouteRow = { url: string; role: "viewer" | "admin"; shows: string[] };

/** Keyed by the build's route pattern; each entry fills the dynamic segments from the seeded data. */
export const DASHBOARD_ROUTES: Record<string, (s: Seeded) => RouteRow> = {
  "/": (s) => ({ url: "/", role: "viewer", shows: [s.store] }),
  // Markers of the admin page itself: a viewer's own name is in every page's header, and the 403 page says what Admin is for.
  "/activity": () => ({ url: "/activity", role: "viewer", shows: ["activity-table"] }),
  "/admin": () => ({ url: "/admin", role: "admin", shows: ["users-table", "tokens-table", "bootstrap-token-row"] }),
  "/api-docs": () => ({ url: "/api-docs", role: "viewer", shows: ["mcpServers"] }),
  "/graph": () => ({ url: "/graph", role: "viewer", shows: [MARK.storeDescription] }),
  "/graph/[store]": (s) => ({ url: `/graph/${s.store}`, role: "viewer", shows: [MARK.node] }),
  "/graph/[store]/nodes/[id]": (s) => ({ url: `/graph/${s.store}/nodes/${s.nodeId}`, role: "viewer", shows: [MARK.node] }),
  "/graph/[store]/thoughts": (s) => ({ url: `/graph/${s.store}/thoughts`, role: "viewer", shows: [MARK.thought] }),
  "/graph/[store]/thoughts/[id]": (s) => ({ url: `/graph/${s.store}/thoughts/${s.thoughtId}`, role: "viewer", shows: [MARK.thought] }),
  "/health": (s) => ({ url: "/health", role: "viewer", shows: [s.store] }),
  "/ledger": () => ({ url: "/ledger", role: "viewer", shows: [MARK.task] }),
  "/ledger/artifacts": (s) => ({ url: `/ledger/artifacts?artifact_type=summary&artifact_id=${s.artifactId}`, role: "viewer", shows: [MARK.task] }),
  "/ledger/tasks/[id]": (s) => ({ url: `/ledger/tasks/${s.taskId}`, role: "viewer", shows: [MARK.task] }),
  "/memories": (s) => ({ url: `/memories?store=${s.store}&path=${encodeURIComponent(MARK.memoryPath)}`, role: "viewer", shows: [MARK.memory] }),
  "/memories/trash": (s) => ({ url: `/memories/trash?store=${s.store}`, role: "viewer", shows: [MARK.trashedMemoryPath] }),
  "/observability": (s) => ({ url: "/observability", role: "viewer", shows: [s.store] }),
  "/reflection": (s) => ({ url: `/reflection?store=${s.store}`, role: "viewer", shows: [MARK.trace] }),
  "/reflection/[store]/learnings/[id]": (s) => ({ url: `/reflection/${s.store}/learnings/${s.learningId}`, role: "viewer", shows: [MARK.learning] }),
  "/reflection/[store]/recalls/[id]": (s) => ({ url: `/reflection/${s.store}/recalls/${s.recallId}`, role: "viewer", shows: [MARK.trace] }),
  "/reflection/[store]/traces/[id]": (s) => ({ url: `/reflection/${s.store}/traces/${s.traceId}`, role: "viewer", shows: [MARK.trace] }),
  "/reflection/[store]/working-memory": (s) => ({ url: `/reflection/${s.store}/working-memory`, role: "viewer", shows: [MARK.workingMemory] }),
  "/search": (s) => ({ url: "/search", role: "viewer", shows: [s.store] }),
  "/search/read/[store]/[chunkId]": (s) => ({ url: `/search/read/${s.store}/${s.memoryChunkId}`, role: "viewer", shows: [MARK.memory] }),
  "/sessions": () => ({ url: "/sessions", role: "viewer", shows: [MARK.session] }),
  "/sessions/[id]": (s) => ({ url: `/sessions/${s.sessionId}`, role: "viewer", shows: [MARK.session, MARK.transcript] }),
  "/sessions/[id]/export": (s) => ({ url: `/sessions/${s.sessionId}/export`, role: "viewer", shows: [MARK.transcript] }),
  "/stores/[store]": (s) => ({ url: `/stores/${s.store}`, role: "viewer", shows: [`secret-${RUN}`] }),
  "/stores/[store]/forgetting": (s) => ({ url: `/stores/${s.store}/forgetting`, role: "viewer", shows: ["Forgotten items"] }),
  "/stores/[store]/review": (s) => ({ url: `/stores/${s.store}/review`, role: "viewer", shows: ["Nothing waits for review"] }),
};

async function post(request: APIRequestContext, url: string, data: unknown, headers = bootstrapHeaders()): Promise<Record<string, unknown>> {
  const res = await request.post(`/api/v1${url}`, { headers, data });
  expect(res.status(), `POST ${url}: ${await res.text()}`).toBeLessThan(300);
  return (await res.json()) as Record<string, unknown>;
}

async function agentToken(request: APIRequestContext, agentId: string): Promise<Record<string, string>> {
  const { token } = (await post(request, "/tokens", { label: agentId, agent_id: agentId, scopes: ["write"] })) as { token: string };
  return { authorization: `Bearer ${token}` };
}

let seeding: Promise<Seeded> | undefined;

/** Real data through the agent API: a store with a memory, a thought, a node and a trace; a task with a run and an artifact; a dialectic session with a message. Once per run, whichever spec asks first. */
export function seedDashboardContent(request: APIRequestContext): Promise<Seeded> {
  seeding ??= seed(request);
  return seeding;
}

async function seed(request: APIRequestContext): Promise<Seeded> {
  const store = MARK.store;
  await post(request, "/stores", { name: store, description: MARK.storeDescription });
  await post(request, `/stores/${store}/memories`, { path: MARK.memoryPath, body: `# Gate\n\n${MARK.memory}`, tags: ["gate"] });
  // A deleted memory: the trash page lists it.
  await post(request, `/stores/${store}/memories`, { path: MARK.trashedMemoryPath, body: "# Gone\n\nkept in the trash" });
  const trashed = await request.delete(`/api/v1/stores/${store}/memories?path=${encodeURIComponent(MARK.trashedMemoryPath)}`, { headers: bootstrapHeaders() });
  expect(trashed.status(), `delete the seeded trash memory: ${await trashed.text()}`).toBe(200);
  // The memory's chunk, as search finds it: the reader route shows it.
  const found = await request.get(`/api/v1/stores/${store}/search?mode=fts&q=${encodeURIComponent(MARK.memory)}`, { headers: bootstrapHeaders() });
  expect(found.status(), `search for the seeded memory: ${await found.text()}`).toBe(200);
  const memoryChunkId = ((await found.json()) as { results: { chunk_id: string }[] }).results[0]?.chunk_id;
  expect(memoryChunkId, "the seeded memory's chunk").toBeTruthy();
  const { thought } = (await post(request, `/stores/${store}/thoughts`, { content: MARK.thought })) as { thought: { id: string } };
  const { node } = (await post(request, `/stores/${store}/nodes`, { name: MARK.node, entity_type: "concept" })) as { node: { id: string } };
  const { trace } = (await post(request, `/stores/${store}/traces`, { intent: { verb: "fix", target: MARK.trace }, shard_type: "gate", outcome: "failure", key_issue: MARK.trace })) as {
    trace: { id: number };
  };
  const { learning } = (await post(request, `/stores/${store}/learnings`, { predicate: "prefers", args: { tool: "vitest" }, description: MARK.learning })) as { learning: { id: number } };
  const { event_id: recallId } = (await post(request, `/stores/${store}/recall`, { query: MARK.trace })) as { event_id: number };
  const wm = await request.put(`/api/v1/stores/${store}/working-memory`, { headers: bootstrapHeaders(), data: { key: "gate/scratch", value: { note: MARK.workingMemory } } });
  expect(wm.status(), `PUT working-memory: ${await wm.text()}`).toBeLessThan(300);

  const runner = await agentToken(request, `gate-runner-${RUN}`);
  const taskId = `gate-task-${RUN}`;
  const artifactId = `gate-artifact-${RUN}`;
  await post(request, "/tasks", { task_id: taskId, intent: MARK.task, spec: { note: MARK.task } }, runner);
  await post(
    request,
    `/tasks/${taskId}/runs`,
    { run_id: `${taskId}-r1`, skill: "summarize", input_hash: "a".repeat(64), runner_version: "1.0.0", output_hash: "b".repeat(64), exit_code: 0, artifacts: [{ artifact_type: "summary", artifact_id: artifactId, store }] },
    runner,
  );

  const pausedId = `gate-builder-${RUN}`;
  const paused = await agentToken(request, pausedId);
  const sessionId = `gate-session-${RUN}`;
  await post(request, "/dialectic/sessions", { session_id: sessionId, topic: MARK.session, reviewer_agent_id: `gate-critic-${RUN}` }, paused);
  await post(request, `/dialectic/sessions/${sessionId}/messages`, { message_type: "thesis", reasoning: MARK.transcript }, paused);
  return { store, taskId, sessionId, thoughtId: thought.id, nodeId: node.id, artifactId, traceId: trace.id, learningId: learning.id, recallId, memoryChunkId };
}

/** Every seeded content string: none may appear in a refused response. */
export const ALL_MARKS = Object.entries(MARK)
  .filter(([k]) => k !== "store" && k !== "viewer")
  .map(([, v]) => v);
