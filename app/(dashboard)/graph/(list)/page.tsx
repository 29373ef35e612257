import Link from "@/components/link";
import { LedgerSection } from "@/components/ledger-section";
import { stores as storesBackend } from "@/lib/stores/backend";
import { requireUser } from "@/app/_server/session";

export default async function GraphIndexPage() {
  await requireUser();
  // The stores of this process's backend (PostgreSQL with DATABASE_URL, never DATA_DIR's then).
  const stores = await storesBackend().listStores();
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Graph</h1>
      <LedgerSection id="graph-stores-heading" title="Stores">
        <p className="text-sm text-slate-600">Each store has its own thoughts and knowledge graph; core can be included read-only when remembering.</p>
        <ul className="divide-y divide-slate-100" data-testid="graph-stores">
          {stores.map((s) => (
            <li key={s.name} className="flex items-center gap-3 py-2 text-sm">
              <Link href={`/graph/${encodeURIComponent(s.name)}`} className="font-medium underline">
                {s.name}
              </Link>
              <span className="text-slate-600">
                {s.counts.thoughts ?? 0} thoughts · {s.counts.kg_node ?? 0} nodes · {s.counts.kg_relation ?? 0} relations
              </span>
              {s.description && <span className="text-slate-500">{s.description}</span>}
            </li>
          ))}
        </ul>
      </LedgerSection>
    </div>
  );
}
