import { execFile, execFileSync, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/**
 * A real PostgreSQL server for tests: Debian's `postgresql` binaries, a fresh
 * cluster in a new directory (in memory for the test suites, clusterParent), a
 * free loopback port and a unix socket in that directory. PostgreSQL refuses to
 * run as root, so as root (CI) every server command runs as the `postgres` user
 * via runuser and the directory is handed to that user.
 */
export type TestPostgres = { url: string; port: number; dir: string; binDir: string; stop: () => void };

/** The newest /usr/lib/postgresql/<major>/bin that has initdb and pg_ctl (Debian's layout). */
export function findPostgresBinDir(root = "/usr/lib/postgresql"): string {
  const majors = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const bin = path.join(root, major, "bin");
    if (fs.existsSync(path.join(bin, "initdb")) && fs.existsSync(path.join(bin, "pg_ctl"))) return bin;
  }
  throw new Error(
    `PostgreSQL server binaries not found under ${root}/<version>/bin. Install Debian's server: apt-get install postgresql (.ci/run does this on CI).`,
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

const asServerUser = (bin: string, args: string[]): [string, string[]] => (isRoot() ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args]);

/** Run a server binary as a non-root user: ourselves, or `postgres` when we are root. */
function runAsServerUser(bin: string, args: string[]): void {
  const [cmd, argv] = asServerUser(bin, args);
  const r = spawnSync(cmd, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) {
    throw new Error(`${path.basename(bin)} failed (exit ${r.status ?? r.signal}): ${r.error?.message ?? ""}${r.stderr}${r.stdout}`);
  }
}

/** The same, without holding the event loop (a caller starting the cluster beside other work). */
async function runAsServerUserAsync(bin: string, args: string[]): Promise<void> {
  const [cmd, argv] = asServerUser(bin, args);
  try {
    await promisify(execFile)(cmd, argv, { encoding: "utf8" });
  } catch (e) {
    const r = e as { code?: number; signal?: string; message: string; stderr?: string; stdout?: string };
    throw new Error(`${path.basename(bin)} failed (exit ${r.code ?? r.signal}): ${r.message}${r.stderr ?? ""}${r.stdout ?? ""}`);
  }
}

/** Room a test suite's cluster may fill: every test file copies a database of its own, and none is dropped before the end. */
const IN_MEMORY_ROOM = 12 * 1024 ** 3;
/** Memory the machine must have free beside it: the cluster's files in memory cannot be evicted, and the run's servers, browsers and workers need theirs. */
const MEMORY_BESIDE = 16 * 1024 ** 3;

/**
 * Where a thrown-away cluster lives: a memory file system (/dev/shm) when it has the room and the machine (or the
 * container's memory limit) has the memory, else the temp dir. A suite creates hundreds of databases (each a copy of
 * a template, several MB of files); on disk those copies wait on write-back and deleting them at the end took half a
 * minute, in memory a few seconds. A run killed outright leaves its directory behind either way.
 */
export function clusterParent(inMemory: boolean): string {
  if (inMemory) {
    try {
      const shm = fs.statfsSync("/dev/shm");
      const limit = process.constrainedMemory?.() || Infinity;
      const memory = Math.min(os.freemem(), limit);
      if (shm.bavail * shm.bsize >= IN_MEMORY_ROOM && memory >= MEMORY_BESIDE) return "/dev/shm";
    } catch {
      // no /dev/shm here: the temp dir
    }
  }
  return os.tmpdir();
}

/**
 * initdb + start. Durability settings are off (fsync, full page writes): the
 * cluster is thrown away after the run, and locking, MVCC and transactions —
 * what the tests check — behave the same. `port`: a fixed one (a bench given
 * its own range) instead of a free one. `keepDir`: the cluster lives there and
 * outlives stop() (a bench reusing what it seeded); made on first use.
 * `inMemory`: a test suite's cluster, in memory where there is room (clusterParent); benches keep theirs on disk.
 */
export async function startTestPostgres({ port: fixedPort, keepDir, inMemory = false }: { port?: number; keepDir?: string; inMemory?: boolean } = {}): Promise<TestPostgres> {
  const binDir = findPostgresBinDir();
  const dir = keepDir ? (fs.mkdirSync(keepDir, { recursive: true }), keepDir) : fs.mkdtempSync(path.join(clusterParent(inMemory), "dualmind-pg-"));
  const data = path.join(dir, "data");
  const kept = keepDir !== undefined && fs.existsSync(path.join(data, "PG_VERSION"));
  const log = path.join(dir, "server.log");
  if (isRoot()) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    fs.chownSync(dir, uid, gid);
  }
  const user = "dualmind";
  if (!kept) await runAsServerUserAsync(path.join(binDir, "initdb"), ["-D", data, "-U", user, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]);
  const port = fixedPort ?? (await freePort());
  const opts = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=100",
  ].join(" ");
  await runAsServerUserAsync(path.join(binDir, "pg_ctl"), ["-D", data, "-l", log, "-o", opts, "-w", "-t", "60", "start"]);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      runAsServerUser(path.join(binDir, "pg_ctl"), ["-D", data, "-m", keepDir ? "fast" : "immediate", "-w", "stop"]);
    } finally {
      if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  return { url: `postgres://${user}@127.0.0.1:${port}/postgres`, port, dir, binDir, stop };
}
