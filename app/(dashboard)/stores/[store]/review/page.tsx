import Link from "@/components/link";
import { requireUser } from "@/app/_server/session";
import { ProposalRow, WritePolicyForm } from "@/components/review-queue";
import { proposalsIn, writePolicyIn } from "@/lib/api/proposals";
import { roleAtLeast } from "@/lib/auth/users";
import { PROPOSAL_LIMITS } from "@/lib/index/proposals";
import { proposalDecisionAction, writePolicyAction } from "./actions";

/**
 * A store's review queue (lib/index/proposals.ts): the writes waiting for review under its write policy, for
 * editors to approve, correct then approve, or reject; and, for admins, the write policy itself.
 */
export default async function ReviewPage({ params, searchParams }: { params: Promise<{ store: string }>; searchParams: Promise<{ offset?: string }> }) {
  const user = await requireUser();
  const { store } = await params;
  const offset = Math.max(0, Number((await searchParams).offset ?? 0) || 0);
  const [page, policy] = await Promise.all([proposalsIn({ store, limit: PROPOSAL_LIMITS.maxPage, offset }), writePolicyIn({ store })]);
  const canDecide = roleAtLeast({ role: user.role, min: "editor" });
  const reviewing = Object.entries(policy.modes).filter(([, m]) => m === "review").map(([k]) => k);
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Review: {store}</h1>
      <p className="text-sm text-slate-600">
        {reviewing.length === 0 ? "Every kind is open: writes count at once." : `Under review: ${reviewing.join(", ")}. Writes by actors not trusted, and flagged writes, wait here and answer nothing until approved.`}{" "}
        <Link className="text-blue-700 underline" href={`/stores/${encodeURIComponent(store)}`}>
          Back to the store
        </Link>
      </p>
      <section className="card space-y-2" aria-labelledby="queue-heading">
        <h2 id="queue-heading" className="text-lg font-medium">
          Waiting ({page.total})
        </h2>
        {page.proposals.length === 0 ? (
          <p className="text-sm" data-testid="no-proposals">
            Nothing waits for review.
          </p>
        ) : (
          <ul className="space-y-2">
            {page.proposals.map((p) => (
              <ProposalRow key={`${p.kind}/${p.id}`} store={store} proposal={p} canDecide={canDecide} action={proposalDecisionAction} />
            ))}
          </ul>
        )}
        {page.next_offset !== null && (
          <Link className="text-blue-700 underline" href={`/stores/${encodeURIComponent(store)}/review?offset=${page.next_offset}`}>
            Older proposals
          </Link>
        )}
      </section>
      <section className="card space-y-2" aria-labelledby="policy-heading">
        <h2 id="policy-heading" className="text-lg font-medium">
          Write policy
        </h2>
        {user.role === "admin" ? (
          <WritePolicyForm store={store} modes={policy.modes} trusted={policy.trusted} action={writePolicyAction} />
        ) : (
          <p className="text-sm">
            {Object.entries(policy.modes).map(([k, m]) => `${k}: ${m}`).join(" · ")} · trusted: {policy.trusted.join(", ") || "none"}
          </p>
        )}
      </section>
    </div>
  );
}
