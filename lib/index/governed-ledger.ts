import { getGovernance } from "../db/connection";
import type { PgGovernanceExecutor } from "../db/pg";
import { engineStep, type Op } from "../db/port";
import { recordOverride } from "../governance/ledger";

/** The most characters of an override's note (recordOverrideSchema). */
const NOTE_MAX_CHARS = 4000;

/**
 * A governed-memory ledger row (an override naming who and why) as a step of the store write that makes the change,
 * as auditStep is (docs/ARCHITECTURE.md, "Governed memory"): on PostgreSQL the ledger is in the same database and the
 * row commits with the change (a savepoint in its transaction); on SQLite it is appended to governance.db during the
 * write, like the audit entry, so it is written only when the steps before it were.
 */
export function ledgerOverrideStep({ note, actor, tokenLabel }: { note: string; actor: string; tokenLabel: string | null }): Op<void> {
  const input = { note: note.slice(0, NOTE_MAX_CHARS) };
  return engineStep({
    sqlite: () => void recordOverride({ handle: getGovernance(), input, actor, tokenLabel: tokenLabel ?? actor }),
    pg: async (tx) => void (await recordOverride({ handle: { kind: "pg", db: tx as unknown as PgGovernanceExecutor }, input, actor, tokenLabel: tokenLabel ?? actor })),
  });
}
