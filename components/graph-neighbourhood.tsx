"use client";

import Link from "@/components/link";
import { useState } from "react";

type Neighbour = { id: string; label: string; type: string; weight: number; direction: "in" | "out" };

const SIZE = 420;
const C = SIZE / 2;
const RADIUS = 150;

function shortLabel(s: string): string {
  return s.length > 18 ? `${s.slice(0, 17)}…` : s;
}

/**
 * The node and its one-hop neighbours on a circle (SVG, no layout library).
 * Edge thickness follows weight; a slider hides weak edges; hovering or
 * focusing a neighbour names the relation.
 */
export function GraphNeighbourhood({ center, neighbours, base }: { center: { id: string; label: string }; neighbours: Neighbour[]; base: string }) {
  const [minWeight, setMinWeight] = useState(0);
  const [active, setActive] = useState<number | null>(null);
  const shown = neighbours.map((n, i) => ({ ...n, i })).filter((n) => n.weight >= minWeight);
  if (neighbours.length === 0) return <p className="text-sm text-slate-600">No relations yet.</p>;
  const focus = active !== null ? neighbours[active] : null;
  return (
    <div className="space-y-2" data-testid="neighbourhood">
      <label className="flex items-center gap-2 text-sm">
        <span className="label">Min weight</span>
        <input type="range" min={0} max={1} step={0.05} value={minWeight} onChange={(e) => setMinWeight(Number(e.target.value))} aria-label="Minimum edge weight" />
        <span className="tabular-nums">{minWeight.toFixed(2)}</span>
        <span className="text-slate-500">
          ({shown.length} of {neighbours.length} shown)
        </span>
      </label>
      <svg viewBox={`0 0 ${SIZE} ${SIZE}`} className="mx-auto w-full max-w-md" role="img" aria-label={`${center.label} and its neighbours`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="28" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" fill="#64748b" />
          </marker>
        </defs>
        {shown.map((n, k) => {
          const angle = (2 * Math.PI * k) / Math.max(1, shown.length) - Math.PI / 2;
          const x = C + RADIUS * Math.cos(angle);
          const y = C + RADIUS * Math.sin(angle);
          const hot = active === n.i;
          return (
            <g key={`${n.id}-${n.type}-${n.direction}`}>
              <line
                x1={n.direction === "out" ? C : x}
                y1={n.direction === "out" ? C : y}
                x2={n.direction === "out" ? x : C}
                y2={n.direction === "out" ? y : C}
                stroke={hot ? "#0f172a" : "#94a3b8"}
                strokeWidth={1 + 4 * n.weight}
                markerEnd="url(#arrow)"
              />
              <Link href={`${base}/nodes/${n.id}`} onMouseEnter={() => setActive(n.i)} onMouseLeave={() => setActive(null)} onFocus={() => setActive(n.i)} onBlur={() => setActive(null)} aria-label={`${n.label}: ${n.type}, weight ${n.weight.toFixed(2)}`}>
                <circle cx={x} cy={y} r={16} fill={hot ? "#0f172a" : "#e2e8f0"} stroke="#475569" />
                <text x={x} y={y + 30} textAnchor="middle" className="fill-slate-700 text-[11px]">
                  {shortLabel(n.label)}
                </text>
              </Link>
            </g>
          );
        })}
        <circle cx={C} cy={C} r={22} fill="#0f172a" />
        <text x={C} y={C + 38} textAnchor="middle" className="fill-slate-900 text-[12px] font-semibold">
          {shortLabel(center.label)}
        </text>
      </svg>
      <p className="min-h-5 text-center text-sm text-slate-700" aria-live="polite" data-testid="neighbourhood-caption">
        {focus ? `${focus.direction === "out" ? `${center.label} → ${focus.label}` : `${focus.label} → ${center.label}`}: ${focus.type} (weight ${focus.weight.toFixed(2)})` : "Hover a neighbour to see the relation."}
      </p>
    </div>
  );
}
