/** A titled card; the heading labels the section for screen readers and tests. */
export function LedgerSection({ id, title, className = "", testId, children }: { id: string; title: React.ReactNode; className?: string; testId?: string; children: React.ReactNode }) {
  return (
    <section className={`card space-y-3 ${className}`} aria-labelledby={id} data-testid={testId}>
      <h2 id={id} className="flex items-center gap-2 text-lg font-medium">
        {title}
      </h2>
      {children}
    </section>
  );
}
