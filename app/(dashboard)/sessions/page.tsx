import { ComingSoon } from "@/components/coming-soon";

export default function SessionsPage() {
  return (
    <ComingSoon title="Sessions">
      <p>Dialectic review sessions (thesis → antithesis → synthesis) by agent and phase, with full transcripts.</p>
    </ComingSoon>
  );
}
