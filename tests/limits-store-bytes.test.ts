import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PUT as putCategory } from "@/app/api/v1/stores/[store]/categories/route";
import { DELETE as unlinkEvidence, POST as linkEvidence } from "@/app/api/v1/stores/[store]/evidence/route";
import { DELETE as deleteFrame } from "@/app/api/v1/stores/[store]/frames/[id]/route";
import { POST as createFrame } from "@/app/api/v1/stores/[store]/frames/route";
import { POST as createLearning } from "@/app/api/v1/stores/[store]/learnings/route";
import { DELETE as deleteNode } from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import { POST as createNode } from "@/app/api/v1/stores/[store]/nodes/route";
import { DELETE as deleteRelation } from "@/app/api/v1/stores/[store]/relations/[id]/route";
import { POST as createRelation } from "@/app/api/v1/stores/[store]/relations/route";
import { DELETE as deleteThought } from "@/app/api/v1/stores/[store]/thoughts/[id]/route";
import { POST as think } from "@/app/api/v1/stores/[store]/thoughts/route";
import { POST as createTrace } from "@/app/api/v1/stores/[store]/traces/route";
import { GET as verifyRoute } from "@/app/api/v1/stores/[store]/verify/route";
import { DELETE as deleteWorkingMemory } from "@/app/api/v1/stores/[store]/working-memory/[key]/route";
import { PUT as putWorkingMemory } from "@/app/api/v1/stores/[store]/working-memory/route";
import { closePg } from "@/lib/db/pg";
import { infrastructureError, STORE_BYTES_REFUSAL, STORE_BYTES_SQLSTATE } from "@/lib/errors";
import { onPg, seedStore, sqliteOnlyCheck, seedToken, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute, restartWith } from "./helpers";

/**
 * DUALMIND_MAX_STORE_BYTES counts every kind of row a token can write, not only
 * documents: each kind below fills a store of its own, through that kind only,
 * until the next write is refused with 422 naming the limit; a delete frees
 * room; the running total survives a restart and equals a recount.
 */
/** Room for some rows of each kind: a thought counts its derived rows (vector, full-text) too, a few KiB. */
const QUOTA = 256 * 1024;
let env: TestEnv;
let token = "";
let admin = "";

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MAX_STORE_BYTES: String(QUOTA) });
  token = await seedToken({ label: "w", agent_id: "filler", scopes: ["write"] });
  admin = await seedToken({ label: "a", agent_id: "quota-admin", scopes: ["admin"] });
});
afterAll(async () => env?.cleanup());

type Answer = { status: number; json: { error?: { code: string; message: string; details: { limit?: string }[] } } & Record<string, unknown> };
const url = (store: string, rest: string) => `http://127.0.0.1/api/v1/stores/${store}/${rest}`;
const pad = (i: number) => `${i}-${"x".repeat(1900)}`;

async function usage(store: string): Promise<{ bytes: number; documents: number }> {
  const [row] = await storeSql<{ bytes: unknown; documents: unknown }>(store, "select bytes, documents from store_usage where id = 1");
  return { bytes: Number(row.bytes), documents: Number(row.documents) };
}

/** The running total beside a recount from the rows, as `verify` reports them. */
async function verified(store: string): Promise<{ bytes: number; documents: number; recounted_bytes: number; recounted_documents: number }> {
  const r = await callRoute(verifyRoute, { token: admin, params: { store }, url: url(store, "verify") });
  expect(r.status).toBe(200);
  return r.json.usage as never;
}

/** Write with `write(i)` until one is refused; the refusal must be the byte quota's, and nothing of it stored. */
async function fillUntilRefused(store: string, write: (i: number) => Promise<Answer>): Promise<{ written: number; refused: Answer }> {
  for (let i = 0; i < 200; i++) {
    const before = await usage(store);
    const r = await write(i);
    if (r.status === 200 || r.status === 201) continue;
    expect(r.status).toBe(422);
    expect(r.json.error?.message).toContain("DUALMIND_MAX_STORE_BYTES");
    expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    expect(await usage(store)).toEqual(before);
    expect(before.bytes).toBeLessThanOrEqual(QUOTA);
    const check = await verified(store);
    expect(check.bytes).toBe(check.recounted_bytes);
    return { written: i, refused: r };
  }
  throw new Error(`store ${store} was never full`);
}

const idOf = (r: Answer, key: string) => (r.json[key] as { id: string }).id;

describe("DUALMIND_MAX_STORE_BYTES over every kind of row", () => {
  it("thoughts fill a store; the next is 422 naming the limit; deleting one makes room again", async () => {
    await seedStore("q-thoughts");
    const ids: string[] = [];
    const { written } = await fillUntilRefused("q-thoughts", async (i) => {
      const r = (await callRoute(think, { token, params: { store: "q-thoughts" }, body: { content: `thought ${pad(i)}` } })) as Answer;
      if (r.status === 201 || r.status === 200) ids.push(idOf(r, "thought"));
      return r;
    });
    expect(written).toBeGreaterThan(5);
    expect((await callRoute(deleteThought, { method: "DELETE", token, params: { store: "q-thoughts", id: ids[0] } })).status).toBe(200);
    expect([200, 201]).toContain((await callRoute(think, { token, params: { store: "q-thoughts" }, body: { content: `thought ${pad(999)}` } })).status);
  });

  it("graph nodes, frames and relations each fill their own store, and a delete frees room", async () => {
    await seedStore("q-nodes");
    const nodes: string[] = [];
    await fillUntilRefused("q-nodes", async (i) => {
      const r = (await callRoute(createNode, { token, params: { store: "q-nodes" }, body: { name: `node ${i}`, entity_type: "concept", attributes: { note: pad(i) } } })) as Answer;
      if (r.status === 201 || r.status === 200) nodes.push(idOf(r, "node"));
      return r;
    });
    expect((await callRoute(deleteNode, { method: "DELETE", token, params: { store: "q-nodes", id: nodes[0] } })).status).toBe(200);
    expect([200, 201]).toContain((await callRoute(createNode, { token, params: { store: "q-nodes" }, body: { name: "after a delete", entity_type: "concept" } })).status);

    await seedStore("q-frames");
    const node = await callRoute(createNode, { token, params: { store: "q-frames" }, body: { name: "framed", entity_type: "concept" } });
    const frames: string[] = [];
    await fillUntilRefused("q-frames", async (i) => {
      const r = (await callRoute(createFrame, { token, params: { store: "q-frames" }, body: { node_id: node.json.node.id, column: "semantic", properties: { note: pad(i) } } })) as Answer;
      if (r.status === 201 || r.status === 200) frames.push(idOf(r, "frame"));
      return r;
    });
    expect((await callRoute(deleteFrame, { method: "DELETE", token, params: { store: "q-frames", id: frames[0] } })).status).toBe(200);
    expect([200, 201]).toContain((await callRoute(createFrame, { token, params: { store: "q-frames" }, body: { node_id: node.json.node.id, column: "semantic", properties: { note: "fits" } } })).status);

    await seedStore("q-relations");
    const from = await callRoute(createNode, { token, params: { store: "q-relations" }, body: { name: "from", entity_type: "concept" } });
    const to = await callRoute(createNode, { token, params: { store: "q-relations" }, body: { name: "to", entity_type: "concept" } });
    const relations: string[] = [];
    await fillUntilRefused("q-relations", async (i) => {
      const r = (await callRoute(createRelation, { token, params: { store: "q-relations" }, body: { from_id: from.json.node.id, to_id: to.json.node.id, relationship_type: `kind_${i}`, attributes: { note: pad(i) } } })) as Answer;
      if (r.status === 201 || r.status === 200) relations.push(idOf(r, "relation"));
      return r;
    });
    expect((await callRoute(deleteRelation, { method: "DELETE", token, params: { store: "q-relations", id: relations[0] } })).status).toBe(200);
    expect([200, 201]).toContain((await callRoute(createRelation, { token, params: { store: "q-relations" }, body: { from_id: to.json.node.id, to_id: from.json.node.id, relationship_type: "back" } })).status);
  });

  it("evidence links, small as they are, fill a store too, and unlinking frees room", async () => {
    await seedStore("q-evidence");
    const store = "q-evidence";
    const node = await callRoute(createNode, { token, params: { store }, body: { name: "n", entity_type: "concept" } });
    const frame = await callRoute(createFrame, { token, params: { store }, body: { node_id: node.json.node.id, column: "semantic", properties: {} } });
    // Thoughts (the links' other ends) until the store is full, then a reserved working-memory value deleted: room for a few links.
    expect((await callRoute(putWorkingMemory, { method: "PUT", token, params: { store }, url: url(store, "working-memory"), body: { key: "reserve", value: "r".repeat(1500) } })).status).toBe(200);
    const thoughts: string[] = [];
    for (;;) {
      const r = await callRoute(think, { token, params: { store }, body: { content: `e${thoughts.length}` } });
      if (r.status !== 201 && r.status !== 200) break;
      thoughts.push(r.json.thought.id);
    }
    // Small values fill what a thought could not, so the room the reserve frees is about all there is.
    for (let i = 0; (await callRoute(putWorkingMemory, { method: "PUT", token, params: { store }, url: url(store, "working-memory"), body: { key: `f${i}`, value: "f".repeat(100) } })).status === 200; i++);
    expect((await callRoute(deleteWorkingMemory, { method: "DELETE", token, params: { store, key: "reserve" }, url: url(store, "working-memory/reserve") })).status).toBe(200);
    const before = await usage(store);
    const link = (thought_id: string) => callRoute(linkEvidence, { token, params: { store }, body: { target: "frame", target_id: frame.json.frame.id, thought_id } }) as Promise<Answer>;
    const linked: string[] = [];
    await fillUntilRefused(store, async (i) => {
      const r = await link(thoughts[i]);
      if (r.status === 201 || r.status === 200) linked.push(thoughts[i]);
      return r;
    });
    expect(linked.length).toBeGreaterThan(0);
    const afterLinks = await usage(store);
    expect(afterLinks.bytes).toBeGreaterThan(before.bytes + linked.length * 64);
    const unlinked = await callRoute(unlinkEvidence, { method: "DELETE", token, params: { store }, body: { target: "frame", target_id: frame.json.frame.id, thought_id: linked[0] } });
    expect(unlinked.status).toBe(200);
    expect((await usage(store)).bytes).toBeLessThan(afterLinks.bytes);
  });

  it("working memory, traces, learnings and category descriptions each fill a store; the refusal names the limit", async () => {
    await seedStore("q-wm");
    await fillUntilRefused("q-wm", (i) => callRoute(putWorkingMemory, { method: "PUT", token, params: { store: "q-wm" }, url: url("q-wm", "working-memory"), body: { key: `k${i}`, value: pad(i) } }) as Promise<Answer>);
    expect((await callRoute(deleteWorkingMemory, { method: "DELETE", token, params: { store: "q-wm", key: "k0" }, url: url("q-wm", "working-memory/k0") })).status).toBe(200);
    expect((await callRoute(putWorkingMemory, { method: "PUT", token, params: { store: "q-wm" }, url: url("q-wm", "working-memory"), body: { key: "again", value: "fits" } })).status).toBe(200);

    await seedStore("q-traces");
    await fillUntilRefused("q-traces", (i) => callRoute(createTrace, { token, params: { store: "q-traces" }, body: { intent: { verb: "fix", target: `thing ${i}` }, shard_type: "code", outcome: "failure", key_issue: pad(i) } }) as Promise<Answer>);

    await seedStore("q-learnings");
    await fillUntilRefused("q-learnings", (i) => callRoute(createLearning, { token, params: { store: "q-learnings" }, body: { predicate: `knows_${i}`, description: pad(i) } }) as Promise<Answer>);

    await seedStore("q-categories");
    const categories = await fillUntilRefused("q-categories", (i) => callRoute(putCategory, { method: "PUT", token, params: { store: "q-categories" }, url: url("q-categories", "categories"), body: { path: `topic-${i}`, description: pad(i) } }) as Promise<Answer>);
    await sqliteOnlyCheck("the category description file beside the index", () => {
      // A refused description leaves no file saying otherwise than the index.
      expect(fs.existsSync(path.join(env.dataDir, "stores", "q-categories", "memory", `topic-${categories.written}`, "_category.md"))).toBe(false);
    });
  });

  it("the running total survives a restart and equals a recount in every store; triggers taken out are put back and the total recounted", async () => {
    const stores = ["q-thoughts", "q-nodes", "q-frames", "q-relations", "q-evidence", "q-wm", "q-traces", "q-learnings", "q-categories"];
    const before = new Map<string, { bytes: number; documents: number }>();
    for (const s of stores) before.set(s, await usage(s));
    await sqliteOnlyCheck("an index.db whose triggers were taken out (an imported file, say)", async () => {
      const names = await storeSql<{ name: string }>("q-thoughts", "select name from sqlite_master where type = 'trigger' and name like 'store_usage_%'");
      expect(names.length).toBeGreaterThan(10);
      for (const { name } of names) await storeSql("q-thoughts", `drop trigger "${name}"`);
      await storeSql("q-thoughts", "update store_usage set bytes = 0");
    });
    restartWith({});
    if (onPg) await closePg();
    for (const s of stores) {
      const check = await verified(s);
      expect(check.bytes).toBe(before.get(s)?.bytes);
      expect(check.bytes).toBe(check.recounted_bytes);
      expect(check.documents).toBe(check.recounted_documents);
    }
  });

  it("the refusal is a 422 naming the limit however the driver's error is wrapped: by drizzle-orm's class, or by another copy of it in a bundled server", () => {
    const refusal = Object.assign(new Error(`${STORE_BYTES_REFUSAL}:2048:1024`), { code: STORE_BYTES_SQLSTATE });
    class BundledCopyOfDrizzleQueryError extends Error {
      constructor(readonly cause: unknown) {
        super("Failed query: insert into thoughts …");
      }
    }
    for (const thrown of [refusal, new BundledCopyOfDrizzleQueryError(refusal)]) {
      const mapped = infrastructureError(thrown);
      expect(mapped?.status).toBe(422);
      expect(mapped?.details?.[0]).toMatchObject({ limit: "DUALMIND_MAX_STORE_BYTES" });
      expect(mapped?.message).toContain("2048");
    }
  });
});
