import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases, storeDir } from "@/lib/db/connection";
import { listStoreNames } from "@/lib/db/store-names";
import { listAuditTail } from "@/lib/governance/audit";
import { requestBaseUrl } from "@/lib/http/public-url";
import { createStore, ensureDefaultStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

describe("the default store", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
  });
  afterEach(() => env.cleanup());

  it("a fresh data dir is ready: core and default exist after the first start, and a second start changes nothing", async () => {
    await bootstrapApp();
    expect(listStoreNames()).toEqual(["core", "default"]);
    expect(openStore({ store: "default" }).store).toBe("default");
    expect(listAuditTail({ limit: 10 }).filter((r) => r.action === "store.create")).toMatchObject([{ actor: "system:bootstrap", target: "store:default" }]);
    await bootstrapApp();
    expect(listAuditTail({ limit: 10 }).filter((r) => r.action === "store.create")).toHaveLength(1);
  });

  it("an operator who removed default keeps it removed on the next start", async () => {
    await bootstrapApp();
    closeAllDatabases();
    fs.rmSync(storeDir("default"), { recursive: true, force: true });
    await bootstrapApp();
    expect(listStoreNames()).toEqual(["core"]);
  });

  it("a data dir from before the rule gets default; one where default was made by hand keeps it as it is", () => {
    createStore({ input: { name: "default", description: "mine" }, actor: "user:admin" });
    expect(ensureDefaultStore()).toBe(false);
    expect(fs.existsSync(path.join(storeDir("default"), "index.db"))).toBe(true);
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
