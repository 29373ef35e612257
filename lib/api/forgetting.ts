import { actorOf } from "../auth/actor";
import type { AgentPrincipal } from "../auth/tokens";
import type { PublicUser } from "../auth/users";
import { currentEngine } from "../db/engine";
import { assertStoresWritable } from "../db/store-lifecycle";
import { FORGET_LIMITS, PROTECT_TAG, forgetPolicies, forgetRuns, forgottenItems, runForgetting, setForgetPolicies, type ForgetRunResult, type KindPolicy } from "../index/forgetting";
import type { forgetPolicyInputSchema } from "../index/forgetting";
import { storeEngineOf } from "../stores/backend";
import { callerOf } from "./respond";
import type { LedgerWho } from "../index/governed-ledger";
import type { z } from "zod";

/**
 * Forgetting by policy for every surface (REST, MCP, CLI, dashboard): the store opened by name, the policy read or
 * set, a run made, each with its ledger override in the same write: who, which store, dry or real, counts per rule.
 */
export type ForgetWho = { principal: AgentPrincipal } | { user: Pick<PublicUser, "username"> } | { cli: true };

const actorFor = (who: ForgetWho) => ("principal" in who ? actorOf(who.principal) : "user" in who ? actorOf(who.user) : actorOf("cli"));

const ledgerFor = (who: ForgetWho): LedgerWho => ({ tokenLabel: "principal" in who ? who.principal.label : actorFor(who), caller: "principal" in who ? callerOf(who.principal) : undefined });

const open = (store: string) => storeEngineOf(currentEngine()).open(store);

const policyAnswer = (store: string, policies: KindPolicy[]) => ({ store, policies, protect_tag: PROTECT_TAG, limits: { max_per_run: FORGET_LIMITS.maxPerRun, default_per_run: FORGET_LIMITS.defaultPerRun } });

export async function forgetPolicyIn({ store }: { store: string }) {
  return policyAnswer(store, await forgetPolicies({ handle: await open(store) }));
}

export async function setForgetPolicyIn({ store, input, who }: { store: string; input: z.input<typeof forgetPolicyInputSchema>; who: ForgetWho }) {
  await assertStoresWritable([store]);
  const { policies } = await setForgetPolicies({ handle: await open(store), store, input, actor: actorFor(who), ledger: ledgerFor(who) });
  return policyAnswer(store, policies);
}

export async function runForgettingIn({ store, dryRun = true, limit, who, now }: { store: string; dryRun?: boolean; limit?: number; who: ForgetWho; now?: number }): Promise<ForgetRunResult & { override_id: string }> {
  await assertStoresWritable([store]);
  return runForgetting({ handle: await open(store), store, actor: actorFor(who), ledger: ledgerFor(who), dryRun, limit, now });
}

export async function forgetRunsIn({ store, limit }: { store: string; limit?: number }) {
  const handle = await open(store);
  return { runs: await forgetRuns({ handle, limit }), forgotten: await forgottenItems({ handle, limit }) };
}
