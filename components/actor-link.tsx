import Link from "@/components/link";

/**
 * An actor or agent id as a link to its activity: `agent:<id>` and a bare
 * agent id filter by agent, `user:`/`cli:`/`system:` actors by actor.
 */
export function ActorLink({ actor, agentId }: { actor?: string; agentId?: string }) {
  const id = agentId ?? (actor?.startsWith("agent:") ? actor.slice("agent:".length) : undefined);
  const href = id !== undefined ? `/activity?${new URLSearchParams({ agent: id })}` : `/activity?${new URLSearchParams({ actor: actor ?? "" })}`;
  return (
    <Link className="underline decoration-dotted" href={href} title="What this one did">
      {agentId ?? actor}
    </Link>
  );
}
