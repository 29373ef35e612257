import { ComingSoon } from "@/components/coming-soon";

export default function HealthPage() {
  return (
    <ComingSoon title="Health">
      <p>Embedder backlog, drift, coverage, recall hit rate and latency per store, over time.</p>
    </ComingSoon>
  );
}
