/**
 * What a dashboard page says instead of its content when it would read store
 * data that is not yet served from PostgreSQL (DATABASE_URL): never the local
 * SQLite stores in DATA_DIR, which agents no longer write to.
 */
export function NotServedOnPostgres({ what, instead }: { what: string; instead?: React.ReactNode }) {
  return (
    <section role="status" className="card space-y-2 border-amber-300 bg-amber-50" data-testid="not-served-on-postgres">
      <h2 className="font-semibold text-amber-900">{what} is not served yet with PostgreSQL</h2>
      <p className="text-sm text-amber-900">
        Stores are in PostgreSQL (DATABASE_URL). This view still works only on the embedded SQLite backend, so it shows nothing rather than the local stores in DATA_DIR, which agents do not write to.
      </p>
      {instead && <p className="text-sm text-amber-900">{instead}</p>}
    </section>
  );
}
