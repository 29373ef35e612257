export function ComingSoon({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">{title}</h1>
      <div className="card text-sm text-slate-600">
        <p className="mb-2 font-medium text-slate-800">Not built yet. What comes here:</p>
        {children}
      </div>
    </div>
  );
}
