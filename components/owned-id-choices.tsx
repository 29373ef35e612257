import Link from "@/components/link";
import { formatTime } from "@/lib/format";
import type { OwnedChoice } from "@/lib/governance/owned-ids";

/**
 * The page for a bare id several agents chose (ids are each owner's own):
 * one link per row, by its key, instead of an error.
 */
export function OwnedIdChoices({ kind, id, basePath, backHref, backLabel, choices }: { kind: string; id: string; basePath: string; backHref: string; backLabel: string; choices: OwnedChoice[] }) {
  return (
    <div className="space-y-4">
      <div className="space-y-1">
        <Link href={backHref} className="text-sm underline">
          ← {backLabel}
        </Link>
        <h1 className="text-2xl font-semibold">
          {choices.length} {kind}s have the id <span className="font-mono">{id}</span>
        </h1>
        <p className="text-sm text-slate-600">Each agent chooses its own ids, so one id can name a {kind} of each. Choose one; its link names it by its key (owner~id).</p>
      </div>
      <ul className="space-y-2" data-testid="owned-id-choices">
        {choices.map((c) => (
          <li key={c.key} className="card">
            <Link href={`${basePath}/${encodeURIComponent(c.key)}`} className="font-medium underline">
              {c.title}
            </Link>
            <p className="text-sm text-slate-600">
              by {c.owner} · {formatTime(c.createdAt)} · <span className="font-mono">{c.key}</span>
            </p>
          </li>
        ))}
      </ul>
    </div>
  );
}
