/** System 2 ledger: tasks, skill runs, validations, provenance, overrides. */
import { z } from "zod";
import { createdOrExisting } from "../contract";
import { CHECKS, VERDICTS } from "../../governance/ledger";
import { count, epochMs, exact } from "./common";

const verdict = z.enum(VERDICTS);

export const task = exact({
  /** The id the requester chose; ids are namespaced per requester. */
  task_id: z.string(),
  /** The task's unambiguous address (`requester~task_id`; the id itself for tasks from before ids were namespaced): what an admin or assignee names where the id alone names several tasks. */
  key: z.string(),
  created_at: epochMs,
  requested_by: z.string(),
  intent: z.string(),
  /** The spec JSON as the requester sent it. */
  spec: z.unknown(),
  required_checks: z.array(z.enum(CHECKS)),
  verdict,
  updated_at: epochMs,
  assignees: z.array(z.string()),
});
/** 201 for a new task, 200 when a retry with the same task_id found it (`created: false`). */
export const taskCreatedResponse = createdOrExisting(exact({ task, created: z.boolean() }));
/** `next_offset`: where the next page starts when rows remain (past `limit` or past DUALMIND_LIST_MAX_BYTES); null at the end. */
export const taskListResponse = exact({ tasks: z.array(task.extend({ run_count: count })), total: count, next_offset: count.nullable() });

const artifactRef = exact({ artifact_type: z.string(), artifact_id: z.string(), store: z.string() });
export const skillRun = exact({
  run_id: z.string(),
  task_id: z.string(),
  skill: z.string(),
  input_hash: z.string(),
  output_hash: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  runner_version: z.string(),
  started_at: epochMs,
  finished_at: epochMs.nullable(),
  output_ref: z.string().nullable(),
  artifacts: z.array(artifactRef),
  agent_id: z.string().nullable(),
  status: z.enum(["running", "succeeded", "failed"]),
});
export const runRecordedResponse = createdOrExisting(exact({ run: skillRun, created: z.boolean() }));
/** Finishing a run: `created` is false when the same finish was recorded before (a retry). */
export const runFinishedResponse = exact({ run: skillRun, created: z.boolean() });

export const validation = exact({
  validation_id: z.string(),
  task_id: z.string(),
  run_id: z.string().nullable(),
  critic_passed: z.boolean().nullable(),
  runner_passed: z.boolean().nullable(),
  details: z.unknown(),
  ts: epochMs,
  agent_id: z.string().nullable(),
});
export const validationRecordedResponse = createdOrExisting(exact({ validation, created: z.boolean() }));

export const override = exact({ override_id: z.string(), ts: epochMs, actor: z.string(), token_label: z.string(), task_id: z.string().nullable(), note: z.string() });
export const overrideRecordedResponse = createdOrExisting(exact({ override, created: z.boolean() }));

export const provenanceRecord = exact({
  id: z.number().int(),
  artifact_type: z.string(),
  artifact_id: z.string(),
  store: z.string(),
  model_name: z.string(),
  model_version: z.string(),
  fingerprint: z.string().nullable(),
  chunking_version: z.string().nullable(),
  input_hash: z.string(),
  task_id: z.string().nullable(),
  run_id: z.string().nullable(),
  recorded_by: z.string(),
  created_at: epochMs,
});
export const provenanceRecordedResponse = exact({ inserted: count, existing: count });
export const artifactProofsResponse = exact({
  provenance: z.array(provenanceRecord),
  runs: z.array(skillRun),
  tasks: z.array(exact({ task, verdict })),
  validations: z.array(validation),
  omitted: exact({ provenance: count, runs: count, tasks: count, validations: count }),
});

export const taskStatusResponse = exact({
  task,
  runs: z.array(skillRun),
  validations: z.array(validation),
  overrides: z.array(override),
  artifacts: z.array(provenanceRecord),
  omitted: exact({ runs: count, validations: count, overrides: count, artifacts: count }),
  verdict: exact({ verdict, reasons: z.array(z.string()) }),
});
