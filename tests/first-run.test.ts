import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases, storeDir } from "@/lib/db/connection";
import { storeSchemaName } from "@/lib/db/pg-store";
import { requestBaseUrl } from "@/lib/http/public-url";
import { stores } from "@/lib/stores/backend";
import { governanceSql, onPg, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";

describe("the default store", () => {
  let env: TestEnv;
  beforeEach(async () => {
    // A data dir (and on PostgreSQL a database) that no start-up has touched yet.
    env = await useTestBackend({}, { bootstrap: false });
  });
  afterEach(() => env.cleanup());

  // PostgreSQL audits core's creation too; the promise here is about default.
  const storeCreations = async () => (await governance().listAuditTail({ limit: 10 })).filter((r) => r.action === "store.create" && r.target === "store:default");

  it("a fresh data dir is ready: core and default exist after the first start, and a second start changes nothing", async () => {
    await bootstrapApp();
    expect(await stores().listStoreNames()).toEqual(["core", "default"]);
    expect((await stores().describeStore({ store: "default" })).name).toBe("default");
    expect(await storeCreations()).toMatchObject([{ actor: "system:bootstrap", target: "store:default" }]);
    await bootstrapApp();
    expect(await storeCreations()).toHaveLength(1);
  });

  it("an operator who removed default keeps it removed on the next start", async () => {
    await bootstrapApp();
    // The operator's removal: the store's folder on SQLite, its schema on PostgreSQL.
    if (onPg) await governanceSql(`drop schema "${storeSchemaName("default")}" cascade`);
    else {
      closeAllDatabases();
      fs.rmSync(storeDir("default"), { recursive: true, force: true });
    }
    await bootstrapApp();
    expect(await stores().listStoreNames()).toEqual(["core"]);
  });

  it("a data dir from before the rule gets default; one where default was made by hand keeps it as it is", async () => {
    await stores().createStore({ input: { name: "default", description: "mine" }, actor: "user:admin" });
    expect(await stores().ensureStartupStores()).toEqual({ createdDefault: false });
    expect((await stores().describeStore({ store: "default" })).description).toBe("mine");
    await sqliteOnlyCheck("the store's index.db file", () => expect(fs.existsSync(path.join(storeDir("default"), "index.db"))).toBe(true));
  });
});

describe("requestBaseUrl: the address examples are built from", () => {
  const headers = (h: Record<string, string>) => new Headers(h);
  const configuredUrl = "http://127.0.0.1:3000";

  it("uses the Host the browser used, with the configured scheme", () => {
    expect(requestBaseUrl({ headers: headers({ host: "memory.lan:8080" }), trustProxyHops: 0, configuredUrl })).toBe("http://memory.lan:8080");
    expect(requestBaseUrl({ headers: headers({ host: "[::1]:3000" }), trustProxyHops: 0, configuredUrl })).toBe("http://[::1]:3000");
    expect(requestBaseUrl({ headers: headers({ host: "Box.Example" }), trustProxyHops: 0, configuredUrl: "https://box.example" })).toBe("https://box.example");
  });

  it("ignores forwarded headers unless DUALMIND_TRUST_PROXY says a proxy sets them", () => {
    const forged = headers({ host: "127.0.0.1:3000", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" });
    expect(requestBaseUrl({ headers: forged, trustProxyHops: 0, configuredUrl })).toBe("http://127.0.0.1:3000");
    expect(requestBaseUrl({ headers: forged, trustProxyHops: 1, configuredUrl })).toBe("https://evil.example");
    expect(requestBaseUrl({ headers: headers({ host: "app:3000", "x-forwarded-host": "mem.example.org, inner", "x-forwarded-proto": "https,http" }), trustProxyHops: 2, configuredUrl })).toBe("https://mem.example.org");
  });

  it("falls back to the configured address on a missing or malformed host, and never echoes markup or odd schemes", () => {
    expect(requestBaseUrl({ headers: headers({}), trustProxyHops: 0, configuredUrl })).toBe("http://127.0.0.1:3000");
    for (const bad of ['evil.example/"><script>', "a b", "x:99999", "user@host", "-bad.example"]) {
      expect(requestBaseUrl({ headers: { get: (n: string) => (n === "host" ? bad : null) }, trustProxyHops: 0, configuredUrl }), bad).toBe("http://127.0.0.1:3000");
    }
    expect(requestBaseUrl({ headers: headers({ host: "box:3000", "x-forwarded-proto": "javascript" }), trustProxyHops: 1, configuredUrl })).toBe("http://box:3000");
  });
});
