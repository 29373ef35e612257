import { ComingSoon } from "@/components/coming-soon";

export default function LedgerPage() {
  return (
    <ComingSoon title="Ledger">
      <p>Tasks, skill runs, validations and the provenance of every derived artifact.</p>
    </ComingSoon>
  );
}
