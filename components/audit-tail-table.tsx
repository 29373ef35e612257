import type { AuditRow } from "@/lib/db/schema/governance";
import { formatTime } from "@/lib/format";

/** The newest audit rows, newest first. */
export function AuditTailTable({ rows, testId }: { rows: AuditRow[]; testId: string }) {
  return (
    <table tabIndex={0} className="data" data-testid={testId}>
      <thead>
        <tr>
          <th>Time</th>
          <th>Actor</th>
          <th>Action</th>
          <th>Target</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((a) => (
          <tr key={a.id}>
            <td>{formatTime(a.ts)}</td>
            <td>{a.actor}</td>
            <td>{a.action}</td>
            <td>{a.target}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
