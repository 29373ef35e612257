import { afterEach, beforeEach } from "vitest";
import { resetConfigForTests } from "@/lib/config";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";

/**
 * The governed-memory suites' setup, once (both backends, tests/backend.ts): a fresh backend per test with store
 * `kb` (and any others), the suite's agents' tokens, the embedder reset before and after, and environment variables a
 * test set removed again.
 */
export const DAY = 86_400_000;
/** The route params of the store the suites write to. */
export const KB = { store: "kb" };

export type AgentToken = Parameters<typeof seedToken>[0];
/** The agents the suites write and read as: people's admin, a writer a store trusts, an agent it does not, a reader. */
export const AGENTS = {
  admin: { label: "admin", agent_id: "boss", scopes: ["read", "write", "admin"] },
  curator: { label: "w", agent_id: "curator", scopes: ["write"] },
  scribe: { label: "scribe", agent_id: "scribe", scopes: ["read", "write"] },
  reader: { label: "r", agent_id: "reader", scopes: ["read"] },
} satisfies Record<string, AgentToken>;

/** A suite's store: its backend (`env`) and a token for each agent named, set before each test. */
export type GovernedStore<K extends string> = { env: TestEnv } & Record<K, string>;

export function useGovernedStore<K extends string>({ tokens, stores = [], env = {}, unset = [] }: { tokens: Record<K, AgentToken>; /** Stores beside `kb`. */ stores?: string[]; /** Variables the backend starts with. */ env?: Record<string, string>; /** Variables a test may set, removed after each. */ unset?: string[] }): GovernedStore<K> {
  const store = {} as GovernedStore<K>;
  beforeEach(async () => {
    store.env = await useTestBackend(env);
    resetEmbedderForTests();
    for (const name of [KB.store, ...stores]) await seedStore(name);
    for (const [key, spec] of Object.entries(tokens) as [K, AgentToken][]) store[key] = (await seedToken(spec)) as GovernedStore<K>[K];
  });
  afterEach(async () => {
    if (unset.length > 0) {
      for (const name of unset) delete process.env[name];
      resetConfigForTests();
    }
    await store.env.cleanup();
    resetEmbedderForTests();
  });
  return store;
}
