import type { z } from "zod";
import type { PgGovernanceExecutor } from "../db/pg";
import { getProofsByArtifact, getTaskStatusById, listTasksByFilter, recordProvenanceBatch, type artifactLookupSchema, type LedgerCaller, type ListTasksQuery, type recordProvenanceSchema } from "./ledger";

/*
 * The ledger repository (./ledger.ts) run inside a caller's PostgreSQL
 * transaction, under the names the store code and the ledger export call it by.
 */
type On = { db: PgGovernanceExecutor };
const inTx = (db: PgGovernanceExecutor) => ({ kind: "pg" as const, db });

export const getTaskStatusByIdPg = ({ db, ...a }: On & { taskId: string; caller?: LedgerCaller }) => getTaskStatusById({ ...a, handle: inTx(db) });
export const listTasksByFilterPg = ({ db, input, caller }: On & { input: ListTasksQuery; caller?: LedgerCaller }) => listTasksByFilter(input, caller, inTx(db));
export const recordProvenanceBatchPg = ({ db, ...a }: On & { input: z.input<typeof recordProvenanceSchema>; recordedBy: string; caller?: LedgerCaller }) => recordProvenanceBatch({ ...a, handle: inTx(db) });
export const getProofsByArtifactPg = ({ db, input, caller }: On & { input: z.input<typeof artifactLookupSchema>; caller?: LedgerCaller }) => getProofsByArtifact(input, caller, inTx(db));
