import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storeIndexPath } from "@/lib/db/connection";
import { documentFtsReady } from "@/lib/index/document-fts";
import { ftsRebuildState, restartFtsRebuild, runFtsRebuild } from "@/lib/index/fts-rebuild";
import { openStore } from "@/lib/stores/stores";
import { searchHere, seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";

/**
 * The full-text rebuild markers are read once per synchronous run of a
 * search, not once per question, and kept across requests while the database
 * is unchanged (lib/index/rebuild-markers.ts). What must not
 * change: a rebuild another process starts (the CLI's `reindex --fts-only`)
 * is in the server's next answer, and one this process starts or finishes is
 * in its very next question.
 */
let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend();
  await seedStore("notes");
  await seedDocument("notes", "ops/nginx.md", "# Nginx\n\nRestart nginx after rotating the certificate on the edge hosts.");
});
afterEach(async () => {
  await env.cleanup();
});

const warnings = async () => (await searchHere("notes", { q: "nginx certificate", mode: "fts" })).warnings.map((w) => w.code);

describe("the full-text rebuild markers", () => {
  it("a rebuild another process started is in the server's next answer, and its end too", async () => {
    expect(await warnings()).not.toContain("fts_rebuilding");
    // Another connection to the file, as the CLI's process has: it empties the index and marks it for the rebuild.
    const other = new Database(storeIndexPath("notes"));
    try {
      other.transaction(() => {
        other.exec("insert into chunks_fts(chunks_fts) values ('delete-all')");
        other.prepare("insert into meta(key, value) values ('fts_rebuild_target', (select max(id) from chunks)), ('fts_rebuilt_through', '0') on conflict(key) do update set value = excluded.value").run();
      })();
    } finally {
      other.close();
    }
    expect(await warnings()).toContain("fts_rebuilding");
    await runFtsRebuild({ handle: openStore({ store: "notes", buildIndex: false }) });
    expect(await warnings()).not.toContain("fts_rebuilding");
  });

  it("a marker written on the server's own connection, past the writers that forget them, is in its next answer", async () => {
    expect(await warnings()).not.toContain("fts_rebuilding");
    expect(await warnings()).not.toContain("fts_rebuilding");
    // The same connection the searches use (no other connection's commit moves its data_version): its own changed rows count.
    const handle = openStore({ store: "notes", buildIndex: false });
    handle.sqlite.prepare("insert into meta(key, value) values ('fts_rebuild_target', (select max(id) from chunks)), ('fts_rebuilt_through', '0') on conflict(key) do update set value = excluded.value").run();
    await Promise.resolve();
    expect(await warnings()).toContain("fts_rebuilding");
    handle.sqlite.prepare("delete from meta where key in ('fts_rebuild_target', 'fts_rebuilt_through')").run();
    await Promise.resolve();
    expect(await warnings()).not.toContain("fts_rebuilding");
  });

  it("a rebuild this process starts is seen at once, in the same run as an earlier read", () => {
    const handle = openStore({ store: "notes" });
    expect(ftsRebuildState(handle).pending).toBe(false);
    expect(documentFtsReady(handle)).toBe(true);
    restartFtsRebuild({ handle });
    expect(ftsRebuildState(handle)).toMatchObject({ pending: true, done: 0 });
    expect(documentFtsReady(handle)).toBe(false);
  });
});
