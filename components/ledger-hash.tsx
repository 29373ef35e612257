/** A sha256 shown short, with the full value on hover and for copy. */
export function LedgerHash({ value }: { value: string | null }) {
  if (!value) return <span className="text-slate-600">—</span>;
  return (
    <code title={value} className="font-mono text-xs">
      {value.slice(0, 12)}…
    </code>
  );
}
