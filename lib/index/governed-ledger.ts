import { getGovernance } from "../db/connection";
import type { PgGovernanceExecutor } from "../db/pg";
import { engineStep, readLedger, type Op } from "../db/port";
import { recordOverride, type LedgerCaller } from "../governance/ledger";
import { assertAuditRoom, assertLedgerRoom } from "../governance/limits";

/** The most characters of an override's note (recordOverrideSchema). */
const NOTE_MAX_CHARS = 4000;

/**
 * Who a governed-memory decision's ledger row names beside its actor: the token label (the actor when none) and,
 * for an agent's request, the caller whose share of the ledger the row counts against.
 */
export type LedgerWho = { tokenLabel: string | null; caller?: LedgerCaller };

/**
 * A governed-memory ledger row (an override naming who and why) as a step of the store write that makes the change,
 * as auditStep is (docs/ARCHITECTURE.md, "Governed memory"); answers the override's id. On PostgreSQL the ledger is
 * in the same database and the row commits with the change (a savepoint in its transaction); on SQLite it is
 * appended to governance.db during the write, like the audit entry, so it is written only when the steps before it
 * were, and a refused row (the ledger full, the agent past its share) rolls the change back. Append it last.
 */
export function ledgerOverrideStep({ note, actor, tokenLabel, caller }: { note: string; actor: string } & LedgerWho): Op<string> {
  const input = { note: note.slice(0, NOTE_MAX_CHARS) };
  const label = tokenLabel ?? actor;
  return engineStep({
    sqlite: () => recordOverride({ handle: getGovernance(), input, actor, tokenLabel: label, caller }).override.override_id,
    pg: async (tx) => (await recordOverride({ handle: { kind: "pg", db: tx as unknown as PgGovernanceExecutor }, input, actor, tokenLabel: label, caller })).override.override_id,
  });
}

/**
 * The room a decision's ledger row and audit entry need, as the first step of its store write: the checks
 * recordOverride makes for an agent's row (the ledger full 507, the agent past its share 422) and the audit append
 * makes for an agent's entry, so a decision they would refuse is refused before it changes anything (a forgetting
 * run before it retires, an edit-then-approve before the edit). People's, the CLI's and the server's rows are not
 * held, as there: an operator can always make room.
 */
export function* ledgerRoomStep({ actor, caller }: { actor: string; caller?: LedgerCaller }): Op<void> {
  if (caller) {
    yield* engineStep({
      sqlite: () => readLedger(getGovernance(), assertLedgerRoom({ agentId: actor })),
      pg: (tx) => readLedger({ kind: "pg", db: tx as unknown as PgGovernanceExecutor }, assertLedgerRoom({ agentId: actor })),
    });
  }
  yield* assertAuditRoom({ actor });
}
