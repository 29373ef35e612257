"use server";

import { z } from "zod";
import { actionError, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import type { Job, ReindexScope } from "@/lib/index/jobs";
import { describeReindexScopeFor, startReindexFor } from "@/lib/metrics/dashboard-views";
import { actorOf } from "@/lib/auth/actor";
import { storeNameSchema } from "@/lib/db/store-names";
import { stores } from "@/lib/stores/backend";

/** Admins only; startReindexJob writes the audit row with who asked. */
export async function startReindexAction(store: string): Promise<ActionResult<Job>> {
  try {
    const admin = await requireRoleForAction("admin");
    const name = storeNameSchema.parse(store);
    const job = await startReindexFor({ store: name, actor: actorOf(admin), reason: "Reindex button on the Admin page" });
    return { ok: true, message: `Reindex of ${name} started.`, data: job };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** What a reindex would go over (counts for the confirmation); reads only. */
export async function describeReindexAction(store: string): Promise<ActionResult<ReindexScope>> {
  try {
    await requireRoleForAction("admin");
    const name = storeNameSchema.parse(store);
    const scope = await describeReindexScopeFor({ store: name });
    return { ok: true, message: "counted", data: scope };
  } catch (e) {
    return actionError({ error: e });
  }
}

export async function getReindexJobAction(id: string): Promise<ActionResult<Job>> {
  try {
    await requireRoleForAction("admin");
    const job = await stores().getJob({ id: z.uuid().parse(id), stores: null });
    if (!job) return { ok: false, error: "No such job." };
    return { ok: true, message: job.status, data: job };
  } catch (e) {
    return actionError({ error: e });
  }
}
