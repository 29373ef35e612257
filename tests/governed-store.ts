import { afterEach, beforeEach } from "vitest";
import { resetConfigForTests } from "@/lib/config";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { governanceSql, onPg, seedStore, seedTokens, type seedToken, useTestBackend, type TestEnv } from "./backend";

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

/** The review suites' agents: people's admin, a writer the store does not trust, the librarian it does, a reader. */
export const REVIEW_AGENTS = {
  admin: AGENTS.admin,
  writer: { label: "scribe-token", agent_id: "scribe", scopes: ["read", "write"] },
  trusted: { label: "librarian-token", agent_id: "librarian", scopes: ["read", "write"] },
  read: AGENTS.reader,
} satisfies Record<string, AgentToken>;

/** The ledger refuses every override whose note is `like` the pattern (a test-only trigger on its overrides table, on either engine). */
export async function ledgerRefuses(pattern: string): Promise<void> {
  if (onPg) {
    await governanceSql(`create or replace function refuse_override() returns trigger language plpgsql as $$ begin if new.note like '${pattern}' then raise exception 'ledger refused the row'; end if; return new; end $$`);
    await governanceSql("create trigger refuse_override before insert on public.overrides for each row execute function refuse_override()");
  } else {
    await governanceSql(`create trigger refuse_override before insert on overrides when new.note like '${pattern}' begin select raise(abort, 'ledger refused the row'); end`);
  }
}

/** A suite's store: its backend (`env`) and a token for each agent named, set before each test. */
export type GovernedStore<K extends string> = { env: TestEnv } & Record<K, string>;

export function useGovernedStore<K extends string>({ tokens, stores = [], env = {}, unset = [] }: { tokens: Record<K, AgentToken>; /** Stores beside `kb`. */ stores?: string[]; /** Variables the backend starts with. */ env?: Record<string, string>; /** Variables a test may set, removed after each. */ unset?: string[] }): GovernedStore<K> {
  const store = {} as GovernedStore<K>;
  const seed = async () => {
    for (const name of [KB.store, ...stores]) await seedStore(name);
    return seedTokens(tokens);
  };
  beforeEach(async () => {
    const started = await useTestBackend(env, { seed });
    store.env = started;
    Object.assign(store, started.seeded);
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
