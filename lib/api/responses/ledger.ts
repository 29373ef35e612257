/** System 2 ledger: tasks, skill runs, validations, provenance, overrides (each declared in lib/governance/ledger.ts). */
import { z } from "zod";
import { createdOrExisting } from "../contract";
import { artifactProofsSchema, overrideSchema, skillRunSchema, taskListSchema, taskSchema, taskStatusSchema, validationSchema } from "../../governance/ledger";
import { count, exact } from "./common";

/** 201 for a new task, 200 when a retry with the same task_id found it (`created: false`). */
export const taskCreatedResponse = createdOrExisting(exact({ task: taskSchema, created: z.boolean() }));
/** `next_offset`: where the next page starts when rows remain (past `limit` or past DUALMIND_LIST_MAX_BYTES); null at the end. */
export const taskListResponse = taskListSchema;

export const runRecordedResponse = createdOrExisting(exact({ run: skillRunSchema, created: z.boolean() }));
/** Finishing a run: `created` is false when the same finish was recorded before (a retry). */
export const runFinishedResponse = exact({ run: skillRunSchema, created: z.boolean() });

export const validationRecordedResponse = createdOrExisting(exact({ validation: validationSchema, created: z.boolean() }));

export const overrideRecordedResponse = createdOrExisting(exact({ override: overrideSchema, created: z.boolean() }));

export const provenanceRecordedResponse = exact({ inserted: count, existing: count });
export const artifactProofsResponse = artifactProofsSchema;

export const taskStatusResponse = taskStatusSchema;
