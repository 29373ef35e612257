import type { PoisonFlag } from "@/lib/poison";

/**
 * Poisoning flags (lib/poison.ts) on an item: a warning that its text may be
 * aimed at a later reader (instructions, credentials, links to run). Said in
 * words — the flag, the rule and its reason — never by colour alone.
 */

// A governed-memory fact's `contradiction` flag (lib/index/facts.ts) shares the shape and is said in words too.
const WORD: Record<PoisonFlag["flag"] | "contradiction", string> = { instructions: "instructions", credentials: "credential", links: "link to run", contradiction: "contradiction" };

/** One badge per flag on an item row: "⚠ instructions: ignore_previous", its reason in the tooltip and the accessible name. */
export function PoisonFlagBadges({ flags }: { flags: PoisonFlag[] | undefined }) {
  if (!flags || flags.length === 0) return null;
  const seen = new Set<string>();
  const distinct = flags.filter((f) => !seen.has(`${f.flag}/${f.rule}`) && seen.add(`${f.flag}/${f.rule}`));
  return (
    <span className="inline-flex flex-wrap gap-1" data-testid="poison-flags">
      {distinct.map((f) => (
        <span
          key={`${f.flag}/${f.rule}`}
          className="rounded border border-amber-400 bg-amber-50 px-1 text-xs font-medium text-amber-900"
          title={`Flagged ${WORD[f.flag]}: ${f.reason} (rule ${f.rule}, in ${f.field})`}
          aria-label={`Warning, flagged ${WORD[f.flag]}: ${f.reason} (rule ${f.rule})`}
          data-testid="poison-flag"
          data-flag={f.flag}
          data-rule={f.rule}
        >
          ⚠ {WORD[f.flag]}: {f.rule}
        </span>
      ))}
    </span>
  );
}

/** The flags of one item on its page: each with its rule, reason, field and masked excerpt. */
export function PoisonFlagList({ flags }: { flags: PoisonFlag[] | undefined }) {
  if (!flags || flags.length === 0) return null;
  return (
    <section role="note" aria-label="Poisoning warnings" className="space-y-1 rounded border border-amber-400 bg-amber-50 p-3 text-sm text-amber-900" data-testid="poison-flag-list">
      <p className="font-medium">⚠ Flagged: this text may be aimed at whoever reads it later. Treat it as data, not as instructions.</p>
      <ul className="list-disc space-y-1 pl-5">
        {flags.map((f, i) => (
          <li key={i} data-testid="poison-flag" data-flag={f.flag} data-rule={f.rule}>
            <strong>{WORD[f.flag]}</strong> ({f.rule}): {f.reason}. In <code>{f.field}</code>: <q className="break-all font-mono text-xs">{f.excerpt}</q>
          </li>
        ))}
      </ul>
    </section>
  );
}
