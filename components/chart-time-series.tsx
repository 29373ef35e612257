"use client";

import { useLayoutEffect, useRef, useState } from "react";
import { CartesianGrid, Line, LineChart, ReferenceLine, Tooltip, XAxis, YAxis } from "recharts";
import { formatNumber } from "@/lib/format";
import { isolatedPoints, timeTicks } from "@/lib/metrics/preparers";

export type ChartSeries = { key: string; label: string; color: string; dashed?: boolean };
export type ChartMarker = { t: number; label: string };

/** UTC so the server's first paint and the hydrated chart print the same ticks. */
function formatTick(t: number, daily: boolean): string {
  const iso = new Date(t).toISOString();
  return daily ? iso.slice(5, 10) : iso.slice(11, 16);
}

/** A value with thousands separators and its unit: "1,250 ms", "2.5%". */
function withUnit(v: number, unit: string): string {
  const n = formatNumber(v, Math.abs(v) >= 100 ? 0 : 2);
  return unit === "%" ? `${n}%` : unit ? `${n} ${unit}` : n;
}

/** The width the server draws at (the SVG is in the first HTML); the browser then draws at its box's width. */
const SERVER_WIDTH = 540;
const MIN_WIDTH = 240;

/** The chart box's width, followed as it changes (a phone turned, a sidebar opened). */
function useBoxWidth(): [React.RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(SERVER_WIDTH);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(MIN_WIDTH, Math.floor(el.clientWidth)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

/**
 * Draws prepared points only: nulls are gaps (connectNulls off), nothing is
 * computed here. The server draws it 540 px wide so the SVG is in the first
 * HTML (scaled down by CSS to a narrower box, whole: the newest points stay in
 * sight); the browser then draws it at the box's own width.
 */
export function ChartTimeSeries({
  title,
  testId,
  points,
  series,
  markers = [],
  unit = "",
  longRange,
  yMax,
}: {
  title: string;
  testId: string;
  points: Record<string, number | null>[];
  series: ChartSeries[];
  markers?: ChartMarker[];
  unit?: string;
  longRange: boolean;
  yMax?: number;
}) {
  const measured = points.filter((p) => series.some((s) => p[s.key] !== null && p[s.key] !== undefined)).length;
  // A point with a gap on both sides has no line to sit on: draw it as a dot.
  const lonely = new Map(series.map((s) => [s.key, isolatedPoints({ points, key: s.key })]));
  const [box, width] = useBoxWidth();
  const axis = points.length ? timeTicks({ from: points[0].t as number, to: points[points.length - 1].t as number, width: width - 96 }) : { ticks: [], daily: longRange };
  return (
    <figure className="card space-y-2" data-testid={testId} data-points={measured}>
      <figcaption className="flex flex-wrap items-baseline justify-between gap-x-2 text-sm font-medium">
        <span>{title}</span>
        <span className="text-xs font-normal text-slate-500">
          {measured === 0 ? "no data in this range" : `${formatNumber(measured)} of ${formatNumber(points.length)} buckets measured`} · times in UTC
          {unit ? ` · ${unit}` : ""}
        </span>
      </figcaption>
      <div ref={box} className="chart-box w-full min-w-0" data-testid={`${testId}-box`}>
        <LineChart width={width} height={200} data={points} margin={{ top: 8, right: 24, bottom: 4, left: 4 }}>
          <CartesianGrid stroke="#e2e8f0" strokeDasharray="3 3" />
          <XAxis dataKey="t" type="number" scale="time" domain={["dataMin", "dataMax"]} ticks={axis.ticks} tickFormatter={(t: number) => formatTick(t, axis.daily)} fontSize={11} />
          <YAxis fontSize={11} width={64} tickFormatter={(v: number) => withUnit(v, unit)} domain={[0, yMax ?? "auto"]} />
          <Tooltip
            labelFormatter={(t) => new Date(Number(t)).toISOString().replace("T", " ").slice(0, 16) + " UTC"}
            formatter={(v) => (typeof v === "number" ? withUnit(v, unit) : String(v ?? "—"))}
          />
          {markers.map((m) => (
            <ReferenceLine key={`${m.t}-${m.label}`} x={m.t} stroke="#7c3aed" strokeDasharray="4 2" label={{ value: m.label, fontSize: 10, fill: "#7c3aed", position: "insideTopLeft" }} />
          ))}
          {series.map((s) => (
            <Line
              key={s.key}
              dataKey={s.key}
              name={s.label}
              stroke={s.color}
              strokeDasharray={s.dashed ? "5 3" : undefined}
              dot={(d: { cx?: number; cy?: number; index?: number }) =>
                d.index !== undefined && lonely.get(s.key)?.has(d.index) && d.cx !== undefined && d.cy !== undefined ? (
                  <circle key={`${s.key}-${d.index}`} cx={d.cx} cy={d.cy} r={3} fill={s.color} data-testid="chart-lonely-point" />
                ) : (
                  <g key={`${s.key}-${d.index}`} />
                )
              }
              connectNulls={false}
              isAnimationActive={false}
              type="linear"
            />
          ))}
        </LineChart>
      </div>
      <ul className="flex flex-wrap gap-3 text-xs text-slate-600">
        {series.map((s) => (
          <li key={s.key} className="flex items-center gap-1">
            <span className="inline-block h-0.5 w-4" style={{ background: s.color }} /> {s.label}
          </li>
        ))}
      </ul>
    </figure>
  );
}
