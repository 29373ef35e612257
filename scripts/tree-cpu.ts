/**
 * The CPU seconds of process trees, sampled from /proc (Linux) for `npm test -- --timings` (scripts/test.ts).
 *
 * /usr/bin/time counts a command and the descendants that were waited for. A phase's browser processes, the
 * servers it stops at the end and the PostgreSQL cluster (a daemon, started by the runner) are not, so a
 * phase's time-counted CPU leaves out much of what it made the machine do. This samples every process
 * descended from a tracked root once a second (a descendant stays counted after it is reparented) and keeps
 * each one's user + system seconds at its last sample. A process that lives less than a sample apart is missed,
 * and one is counted up to its last sample: the two measures are reported side by side, neither is the sum.
 */
import fs from "node:fs";

type Proc = { key: string; ppid: number; cpu: number };

const TICKS = 100; // USER_HZ on Linux

function readProcs(): Map<number, Proc> {
  const procs = new Map<number, Proc>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      // Fields after the command (which may hold spaces and parentheses): state, ppid, …, utime (14th), stime, …, starttime (22nd).
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      procs.set(Number(name), { key: `${name}:${f[19]}`, ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICKS });
    } catch {
      // gone while listed
    }
  }
  return procs;
}

export class TreeCpu {
  /** Per name, each process counted (pid and start time) with its seconds at its last sample. */
  private tracked = new Map<string, Map<string, number>>();
  private timer: NodeJS.Timeout | null = null;

  /** Null where there is no /proc to read. */
  static start(): TreeCpu | null {
    if (!fs.existsSync("/proc/self/stat")) return null;
    const t = new TreeCpu();
    t.timer = setInterval(() => t.sample(), 1000);
    t.timer.unref();
    return t;
  }

  /** Count `pid` and everything it starts under `name`. */
  track(name: string, pid: number): void {
    const root = readProcs().get(pid);
    if (!root) return;
    if (!this.tracked.has(name)) this.tracked.set(name, new Map());
    this.tracked.get(name)!.set(root.key, root.cpu);
    this.sample();
  }

  /** The seconds counted under `name` so far (a last sample first). */
  seconds(name: string): number | undefined {
    this.sample();
    const t = this.tracked.get(name);
    return t ? [...t.values()].reduce((a, b) => a + b, 0) : undefined;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private sample(): void {
    let procs: Map<number, Proc>;
    try {
      procs = readProcs();
    } catch {
      return;
    }
    const children = new Map<number, number[]>();
    for (const [pid, p] of procs) {
      const c = children.get(p.ppid);
      if (c) c.push(pid);
      else children.set(p.ppid, [pid]);
    }
    for (const counted of this.tracked.values()) {
      // Every live process already counted (the root; one reparented away from its tree stays in), with its descendants.
      const queue = [...procs].filter(([, p]) => counted.has(p.key)).map(([pid]) => pid);
      const seen = new Set<number>();
      while (queue.length) {
        const pid = queue.pop()!;
        if (seen.has(pid)) continue;
        seen.add(pid);
        const p = procs.get(pid);
        if (!p) continue;
        counted.set(p.key, Math.max(p.cpu, counted.get(p.key) ?? 0));
        queue.push(...(children.get(pid) ?? []));
      }
    }
  }
}
