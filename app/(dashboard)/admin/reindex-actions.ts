"use server";

import { z } from "zod";
import { actionError, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { describeReindexScope, startReindexJob, type Job, type ReindexScope } from "@/lib/index/jobs";
import { actorOf } from "@/lib/auth/actor";
import { storeNameSchema } from "@/lib/db/store-names";
import { openStore } from "@/lib/stores/stores";
import { stores, storesOnPostgres } from "@/lib/stores/backend";

/**
 * On PostgreSQL the memories table is the truth and every other document came
 * by API: a reindex rebuilds the memories' documents and keeps the API ones.
 * A running job is joined by the start (one per store across replicas), so
 * `running` is not looked up here.
 */
async function describeReindexScopePg(store: string): Promise<ReindexScope> {
  const { counts } = await stores().describeStore({ store });
  const memories = counts.memories ?? 0;
  return { store, memories, documents: 0, apiDocuments: Math.max(0, (counts.documents ?? 0) - memories), running: false, truth: "memories table" };
}

/** Admins only; startReindexJob writes the audit row with who asked. */
export async function startReindexAction(store: string): Promise<ActionResult<Job>> {
  try {
    const admin = await requireRoleForAction("admin");
    const name = storeNameSchema.parse(store);
    const job = storesOnPostgres()
      ? await stores().startReindex({ store: name, actor: actorOf(admin) })
      : startReindexJob({ handle: openStore({ store: name, buildIndex: false }), actor: actorOf(admin), reason: "Reindex button on the Admin page" });
    return { ok: true, message: `Reindex of ${name} started.`, data: job };
  } catch (e) {
    return actionError(e);
  }
}

/** What a reindex would go over (counts for the confirmation); reads only. */
export async function describeReindexAction(store: string): Promise<ActionResult<ReindexScope>> {
  try {
    await requireRoleForAction("admin");
    const name = storeNameSchema.parse(store);
    const scope = storesOnPostgres() ? await describeReindexScopePg(name) : describeReindexScope({ handle: openStore({ store: name, buildIndex: false }) });
    return { ok: true, message: "counted", data: scope };
  } catch (e) {
    return actionError(e);
  }
}

export async function getReindexJobAction(id: string): Promise<ActionResult<Job>> {
  try {
    await requireRoleForAction("admin");
    const job = await stores().getJob({ id: z.uuid().parse(id), stores: null });
    if (!job) return { ok: false, error: "No such job." };
    return { ok: true, message: job.status, data: job };
  } catch (e) {
    return actionError(e);
  }
}
