import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as metricsGET } from "@/app/api/metrics/route";
import { POST as searchPOST } from "@/app/api/v1/stores/[store]/search/route";
import { GET as listStoresGET } from "@/app/api/v1/stores/route";
import { ageStoreHandlesForTests, getStoreDb, holdingStoreHandles, isStoreDbOpen, openStoreHandles, STORE_CLOSES_PER_CALL, storeIndexPath } from "@/lib/db/connection";
import { getLatestSnapshotsByStore, measureStoreSnapshot, snapshotAllStores } from "@/lib/metrics/snapshots";
import { startEmbedWorker } from "@/lib/embed/worker";
import { closeHold, openHold } from "@/lib/embed/healing";
import { startMemoryWatch } from "@/lib/index/watch";
import { getAllStoreStatuses, runStatusWatchPass } from "@/lib/metrics/health";
import { drainEmbeddings, governanceSql, onPg, seedDocument, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
import { patience } from "./fixtures/patience";

/**
 * With more stores than DUALMIND_MAX_OPEN_STORES, the server's background loops (the embed worker's rounds, the
 * status watch, the memory folder scan, a metrics scrape) look at every store without keeping it open, and do not
 * open a closed store again while its files are unchanged; a store changed by another process is seen.
 */
const LIMIT = 3;
const STORES = Array.from({ length: 12 }, (_, i) => `s${i}`);
let env: TestEnv;
let admin = "";

/** Files under the data dir this process holds open (each store connection holds index.db, -wal and -shm). */
function openStoreFiles(): number {
  let n = 0;
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(path.join(env.dataDir, "stores"))) n++;
    } catch {
      // closed while listed
    }
  }
  return n;
}

async function scrape(): Promise<{ open: number; opened: number }> {
  const r = await fetchMetrics();
  const num = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(r)?.[1]);
  return { open: num("dualmind_store_connections_open"), opened: num("dualmind_store_connection_opens_total") };
}

async function fetchMetrics(): Promise<string> {
  const res = await metricsGET(new Request("http://127.0.0.1/api/metrics", { headers: { authorization: `Bearer ${admin}` } }) as never);
  expect(res.status).toBe(200);
  return res.text();
}

/** Past the file system's timestamp granularity: stamps of files written before now can be trusted. */
const settle = () => new Promise((r) => setTimeout(r, 2_100));

/** Another process's write to a store (the CLI, a separate worker): a second connection, not this process's. */
function writeFromAnotherConnection(store: string, sql: string): void {
  const other = new Database(storeIndexPath(store));
  try {
    other.pragma("busy_timeout = 5000");
    other.exec(sql);
  } finally {
    other.close();
  }
}

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MAX_OPEN_STORES: String(LIMIT), DUALMIND_MAX_STORES: "40", DUALMIND_MAX_WATCHED_DIRS: "1" });
  admin = await seedToken({ label: "a", agent_id: "admin", scopes: ["admin"] });
  for (const s of STORES) {
    await seedStore(s);
    await seedDocument(s, "notes.md", `# Notes of ${s}\n\nThe quokka${s} lives on an island.`);
  }
  await drainEmbeddings(STORES);
});
afterAll(async () => env?.cleanup());

describe.skipIf(onPg)("background looks at many SQLite stores", () => {
  it("the status watch, metrics, the minute snapshots and the store list keep at most DUALMIND_MAX_OPEN_STORES open and reopen no unchanged store, yet see another process's write", async () => {
    await settle();
    const listStores = async () => {
      const list = await callRoute(listStoresGET, { token: admin, url: "http://127.0.0.1/api/v1/stores" });
      expect(list.status).toBe(200);
      expect((list.json as { stores: { name: string }[] }).stores.map((s) => s.name)).toEqual(expect.arrayContaining(STORES));
    };
    ageStoreHandlesForTests();
    await runStatusWatchPass();
    await listStores();
    await snapshotAllStores();
    // Closing a connection checkpoints its store's log (a change of its files): the next pass looks at such a store once more.
    await settle();
    await runStatusWatchPass();
    await listStores();
    await snapshotAllStores();
    await fetchMetrics();
    expect(openStoreFiles()).toBeLessThanOrEqual(LIMIT * 3);
    const first = await scrape();
    expect(first.open).toBeLessThanOrEqual(LIMIT);
    for (let i = 0; i < 3; i++) {
      await runStatusWatchPass();
      await listStores();
      expect((await snapshotAllStores()).saved).toBe(STORES.length + 2);
    }
    expect(openStoreHandles().length).toBeLessThanOrEqual(LIMIT);
    const later = await scrape();
    expect(later.opened - first.opened).toBe(0);
    expect(later.open).toBeLessThanOrEqual(LIMIT);
    expect((await getAllStoreStatuses()).map((s) => s.store).sort()).toEqual(expect.arrayContaining(STORES));

    // A closed store's minute snapshot, measured without opening it, is what measuring it open gives.
    const quietStore = STORES.find((s) => !isStoreDbOpen(s))!;
    const minute = Date.now();
    await snapshotAllStores({ now: minute });
    expect(isStoreDbOpen(quietStore)).toBe(false);
    const saved = getLatestSnapshotsByStore({ stores: [quietStore] }).get(quietStore);
    const measured = await holdingStoreHandles({ work: () => measureStoreSnapshot({ handle: getStoreDb({ store: quietStore }), now: minute }) });
    expect(saved).toEqual(measured);

    // A store this process has closed gets a queued item from another connection: its status shows it.
    const closed = STORES.find((s) => !isStoreDbOpen(s))!;
    const before = (await getAllStoreStatuses()).find((s) => s.store === closed)!;
    writeFromAnotherConnection(closed, `insert into embed_queue(kind, ref_id, input_hash, enqueued_at, attempts, next_attempt_at) select kind, ref_id, 'changed elsewhere', 1, 0, 1 from embeddings limit 1`);
    await settle();
    const after = (await getAllStoreStatuses()).find((s) => s.store === closed)!;
    expect(after.backlog.pending).toBe(before.backlog.pending + 1);
  }, patience(60_000));

  it("connections a burst of requests opened are closed once idle by the loops, though no store changed and none is opened", async () => {
    await settle();
    await runStatusWatchPass();
    for (const store of STORES) getStoreDb({ store });
    expect(openStoreHandles().length).toBeGreaterThan(LIMIT);
    ageStoreHandlesForTests();
    const before = await scrape();
    await runStatusWatchPass();
    expect(openStoreHandles().length).toBeLessThanOrEqual(LIMIT);
    expect(openStoreFiles()).toBeLessThanOrEqual(LIMIT * 3);
    expect((await scrape()).opened - before.opened).toBe(0);
  }, patience(60_000));

  it("a store written through this server and then closed for the limit is not opened again by the loops: its close changed its files, not its content", async () => {
    const store = STORES[0];
    await seedDocument(store, "later.md", "# Later\n\nA note written after the others.");
    await drainEmbeddings([store]);
    await settle();
    // The loops look at it while it is open.
    await runStatusWatchPass();
    await snapshotAllStores();
    ageStoreHandlesForTests();
    for (const other of STORES.slice(1, LIMIT + 2)) getStoreDb({ store: other });
    expect(isStoreDbOpen(store)).toBe(false);
    // At once: the close's checkpoint is too recent for the file times to vouch for, yet it is known to be this close's.
    const before = await scrape();
    await runStatusWatchPass();
    await snapshotAllStores();
    const after = await scrape();
    expect(after.opened - before.opened).toBe(0);
    expect((await getAllStoreStatuses()).find((s) => s.store === store)!.backlog.pending).toBe(0);
  }, patience(60_000));

  it("the embed worker's round closes idle connections a few at a time, with other work running between them", async () => {
    await drainEmbeddings(STORES);
    await settle();
    for (const store of STORES) getStoreDb({ store });
    ageStoreHandlesForTests();
    expect(openStoreHandles().length).toBeGreaterThanOrEqual(STORES.length);
    // What a request would see: between two turns of the event loop, how many connections the round closed.
    let last = openStoreHandles().length;
    let mostInOneTurn = 0;
    let sampling = true;
    const turn = () => {
      const now = openStoreHandles().length;
      mostInOneTurn = Math.max(mostInOneTurn, last - now);
      last = now;
      if (sampling) setImmediate(turn);
    };
    setImmediate(turn);
    const stop = new AbortController();
    const worker = startEmbedWorker({ idleMs: 20, signal: stop.signal, mode: "in_server" });
    try {
      const deadline = Date.now() + 20_000;
      while (openStoreHandles().length > LIMIT && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(openStoreHandles().length).toBeLessThanOrEqual(LIMIT);
    } finally {
      sampling = false;
      stop.abort();
      await worker;
    }
    // Every idle connection beyond the limit of three was closed, never all in one turn (each close checkpoints and syncs).
    expect(mostInOneTurn).toBeGreaterThan(0);
    expect(mostInOneTurn).toBeLessThanOrEqual(STORE_CLOSES_PER_CALL);
  }, patience(60_000));

  it("the embed worker's rounds keep at most DUALMIND_MAX_OPEN_STORES open, reopen no unchanged store, and embed what another process queued in a closed store", async () => {
    await drainEmbeddings(STORES);
    await settle();
    ageStoreHandlesForTests();
    const stop = new AbortController();
    const worker = startEmbedWorker({ idleMs: 20, signal: stop.signal, mode: "in_server" });
    try {
      // Rounds over every store until each was looked at once since the handles aged: the opens stop.
      let first = await scrape();
      for (let i = 0; i < 40; i++) {
        await new Promise((r) => setTimeout(r, 500));
        const now = await scrape();
        if (now.opened === first.opened) break;
        first = now;
      }
      await new Promise((r) => setTimeout(r, 1_500));
      expect(openStoreHandles().length).toBeLessThanOrEqual(LIMIT);
      expect(openStoreFiles()).toBeLessThanOrEqual(LIMIT * 3);
      const later = await scrape();
      expect(later.opened - first.opened).toBe(0);

      // Another process queues work in a store this process has closed, and in one it has open (a search used it):
      // unchanged stores are not read again, but a changed one is, open or closed.
      const closed = STORES.find((s) => !isStoreDbOpen(s))!;
      const open = STORES.find((s) => s !== closed)!;
      expect((await callRoute(searchPOST, { token: admin, params: { store: open }, body: { q: "quokka", mode: "fts" } })).status).toBe(200);
      expect(isStoreDbOpen(open)).toBe(true);
      for (const store of [closed, open]) writeFromAnotherConnection(store, `insert into embed_queue(kind, ref_id, input_hash, enqueued_at, attempts, next_attempt_at) select kind, ref_id, 'changed elsewhere', 1, 0, 1 from embeddings limit 1`);
      const deadline = Date.now() + 20_000;
      let pending = 2;
      while (pending > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        pending = (await getAllStoreStatuses()).filter((s) => s.store === closed || s.store === open).reduce((n, s) => n + s.backlog.pending, 0);
      }
      expect(pending).toBe(0);

      // A row parked during an outage in a closed store is swept back when the queue recovers (the worker's one sweep
      // per store was spent at its first look), though the store's files did not change since.
      const parkedIn = STORES.find((s) => !isStoreDbOpen(s) && s !== closed && s !== open)!;
      writeFromAnotherConnection(parkedIn, `insert into embed_queue(kind, ref_id, input_hash, enqueued_at, attempts, next_attempt_at, parked_at, last_error) select kind, ref_id, 'parked in an outage', 1, 6, 1, 1, 'unavailable: the provider was down' from embeddings limit 1`);
      await settle();
      const parkedNow = () => getAllStoreStatuses().then((all) => all.find((s) => s.store === parkedIn)!.backlog);
      expect((await parkedNow()).parked).toBe(1);
      openHold({ scope: "disk", error: "disk_full: for the test" });
      closeHold({ scope: "disk" });
      const until = Date.now() + 20_000;
      let backlog = await parkedNow();
      while ((backlog.parked > 0 || backlog.pending > 0) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        backlog = await parkedNow();
      }
      expect(backlog).toMatchObject({ parked: 0, pending: 0 });
    } finally {
      stop.abort();
      await worker;
    }
  }, patience(60_000));

  it("the memory scan reopens no unchanged store, and indexes a memory file written into a closed store", async () => {
    await settle();
    ageStoreHandlesForTests();
    const stopWatch = startMemoryWatch({ scanMs: 300, batchMs: 20 });
    try {
      // The first scan looks at every store; the next ones find nothing changed.
      await new Promise((r) => setTimeout(r, 1_500));
      const first = await scrape();
      await new Promise((r) => setTimeout(r, 1_500));
      expect(openStoreHandles().length).toBeLessThanOrEqual(LIMIT);
      const later = await scrape();
      expect(later.opened - first.opened).toBe(0);

      const closed = STORES.find((s) => !isStoreDbOpen(s))!;
      const dir = path.join(env.dataDir, "stores", closed, "memory", "field");
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, "sighting.md"), "# Sighting\n\nA wombatzephyr was seen at dawn.\n");
      // Found by the scan with the store still closed (a search would open it): the change is audited, then searchable.
      const deadline = Date.now() + 20_000;
      let audited = 0;
      while (audited === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        audited = (await governanceSql("select * from audit_log where action = 'store.file_change' and target = ?", [`store:${closed}`])).length;
      }
      expect(audited).toBe(1);
      const r = await callRoute(searchPOST, { token: admin, params: { store: closed }, body: { q: "wombatzephyr", mode: "fts" } });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const hits = (r.json as { results: unknown[] }).results.length;
      expect(hits).toBeGreaterThan(0);
    } finally {
      await stopWatch();
    }
  }, patience(60_000));
});
