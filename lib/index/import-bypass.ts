import { auditStep } from "../governance/audit";
import type { Op } from "../db/port";
import { ledgerOverrideStep } from "./governed-ledger";
import { writePolicyOp } from "./write-policy";

/**
 * A bulk import of memories (PostgreSQL `memories import`) does not pass through the create path, so under a
 * `review` policy for memories it bypasses review: recorded as a bypass, in the import's own transaction, with an
 * audit entry (`proposal.bypass`, "bypass: import") and a ledger row, as a trusted writer's bypass is.
 */
export function* importBypassOp({ store, imported, actor }: { store: string; imported: { added: number; changed: number }; actor: string }): Op<void> {
  if (imported.added + imported.changed === 0) return;
  const policy = yield* writePolicyOp({ lock: true });
  if (policy.modes.memory !== "review") return;
  const what = `${imported.added} added, ${imported.changed} changed`;
  yield* auditStep({ actor, action: "proposal.bypass", target: `store:${store}`, reason: "bypass: import", details: { store, kind: "memory", added: imported.added, changed: imported.changed } });
  yield* ledgerOverrideStep({ note: `write.bypass memory import in store ${store} (${what}): bypass: import`, actor, tokenLabel: null });
}
