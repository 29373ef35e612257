import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { getStoreDb, storeIndexPath } from "@/lib/db/connection";
import { describeStore } from "@/lib/stores/stores";
import { stores } from "@/lib/stores/backend";
import { seedStore, useTestBackend, type TestEnv } from "./backend";

/**
 * A new index.db after the first in a process starts as a copy of that one as
 * its migrations left it (lib/db/connection.ts): each store still gets the
 * whole schema, its own creation time and its own ANN identity.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend();
});
afterAll(async () => env?.cleanup());

const schemaOf = (file: string): string[] => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("select type || ' ' || name || ' ' || coalesce(sql, '') as s from sqlite_master order by type, name").all() as { s: string }[]).map((r) => r.s);
  } finally {
    db.close();
  }
};
const annDbId = (store: string): string | undefined =>
  (getStoreDb({ store }).sqlite.prepare("select value from meta where key = 'ann_db_id'").get() as { value: string } | undefined)?.value;

it("a store made after others has the same schema, its own creation time and its own ANN identity; made again, a new identity", async () => {
  // bootstrapApp made core and default; these are made the same way POST /stores does.
  vi.useFakeTimers({ now: Date.parse("2026-03-01T10:00:00Z"), toFake: ["Date"] });
  try {
    await seedStore("first-one");
    vi.setSystemTime(Date.parse("2026-03-02T10:00:00Z"));
    await seedStore("second-one");
  } finally {
    vi.useRealTimers();
  }
  const first = describeStore({ handle: getStoreDb({ store: "first-one" }) });
  const second = describeStore({ handle: getStoreDb({ store: "second-one" }) });
  expect(first.created_at).toBe(Date.parse("2026-03-01T10:00:00Z"));
  expect(second.created_at).toBe(Date.parse("2026-03-02T10:00:00Z"));
  expect(second.schema_version).toBe(first.schema_version);
  expect(schemaOf(storeIndexPath("second-one"))).toEqual(schemaOf(storeIndexPath("default")));
  expect(second.counts).toEqual(first.counts);

  const ids = ["core", "default", "first-one", "second-one"].map(annDbId);
  expect(ids.every((id) => /^[0-9a-f]{32}$/.test(id ?? ""))).toBe(true);
  expect(new Set(ids).size).toBe(ids.length);

  // Deleted and made again: a vector index file left from the old database must never be served to the new one.
  const before = annDbId("second-one");
  await stores().deleteStore({ name: "second-one", actor: "test", confirm: "second-one" });
  expect(fs.existsSync(path.dirname(storeIndexPath("second-one")))).toBe(false);
  await seedStore("second-one");
  expect(annDbId("second-one")).toMatch(/^[0-9a-f]{32}$/);
  expect(annDbId("second-one")).not.toBe(before);
});
