import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * Imports go down (docs/ARCHITECTURE.md, "Code layout"). Every import, `export …
 * from` and `import()` in lib/, components/ and app/ is read with the
 * TypeScript parser and checked against the layer order below. A new lib/
 * area fails here until it is given a place in the order.
 */

const ROOT = path.resolve(__dirname, "..");

/**
 * lib/ areas, low → high. An area may import its own files and any area of a
 * lower rank; areas of the same rank are peers and never import each other.
 * Why this order, where it is not obvious:
 * - http (body limit, security headers, dashboard access, action results) is
 *   plain web plumbing, below everything that handles a request.
 * - governance sits below auth: the login throttle and token changes write
 *   audit rows, and the ledger never needs to know how a caller signed in.
 * - backend (governance(): the ledger, dialectic, tokens and audit on SQLite
 *   or PostgreSQL) sits on governance and auth, whose per-dialect functions it
 *   puts behind one interface for routes, MCP and bearer authentication.
 * - retrieval (the one pipeline: match builder, query vector, KNN over store
 *   and core, fusion, reasons, explain) sits on embed and under index, whose
 *   search, and recall's and graph's remember, score on top of it.
 * - stores sits above index: openStore builds a missing index on first access.
 * - recall and graph are peers on top of stores; metrics reads both.
 * - eval (self-recall) asks a store through search, recall and remember, so
 *   it sits above them; metrics exposes its figures, so it sits below metrics.
 * - embeddable-kinds.ts names every kind (chunks from index, traces and
 *   learnings from recall, thoughts and nodes from graph) for the entry points
 *   to register, so it sits with the other entry-point modules at the top;
 *   bootstrap.ts, which every server-side entry calls first, is above them all.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["base"],
  ["http"],
  ["db"],
  ["governance"],
  ["auth"],
  ["backend"],
  ["embed"],
  ["retrieval"],
  ["index"],
  ["stores"],
  ["recall", "graph"],
  ["eval"],
  ["metrics"],
  ["api"],
  ["mcp", "backup", "embeddable-kinds"],
  ["bootstrap"],
];

/** Single-file modules at the bottom: no domain, imported by everything. */
const BASE_FILES = new Set(["config.ts", "log.ts", "errors.ts", "format.ts", "version.ts", "install-root.ts", "common.ts", "names.ts", "collections.ts", "private-fs.ts", "credentials.ts", "poison.ts"]);

/**
 * lib/client is the typed HTTP client agents import: it may name the API's
 * types (type-only imports are erased, so no server code reaches a client
 * bundle) and nothing else from lib/.
 */
const CLIENT_AREA = "client";

const RANK = new Map(LAYERS.flatMap((peers, rank) => peers.map((area) => [area, rank] as const)));

type Edge = { from: string; to: string; spec: string; typeOnly: boolean };

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(rel);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts") ? [rel] : [];
  });
}

function resolveSpecifier(from: string, spec: string): string | null {
  let base: string;
  if (spec.startsWith("@/")) base = spec.slice(2);
  else if (spec.startsWith(".")) base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  else return null;
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) {
    const abs = path.join(ROOT, candidate);
    if (fs.existsSync(abs) && fs.statSync(abs).isFile()) return candidate;
  }
  return `${base} (unresolved)`;
}

/** Every module specifier a file names, with whether the import is erased at compile time. */
function importsOf(file: string): { spec: string; typeOnly: boolean }[] {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
  const out: { spec: string; typeOnly: boolean }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : null;
      const typeOnly = !!clause && (clause.isTypeOnly || (!clause.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
      out.push({ spec: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push({ spec: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      out.push({ spec: node.arguments[0].text, typeOnly: false });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push({ spec: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The lib/ area of a file: its folder under lib/, "base" for the base files, the file name (no extension) for other top-level files. */
function libArea(file: string): string {
  const rest = file.slice("lib/".length);
  const slash = rest.indexOf("/");
  if (slash >= 0) return rest.slice(0, slash);
  return BASE_FILES.has(rest) ? "base" : rest.replace(/\.tsx?$/, "");
}

const FILES = ["lib", "components", "app"].flatMap(sourceFiles);
const EDGES: Edge[] = FILES.flatMap((from) => importsOf(from).map(({ spec, typeOnly }) => ({ from, spec, typeOnly, to: resolveSpecifier(from, spec) ?? spec })));

/** Every import that breaks the rules, as "from → to: why". */
function violations(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const line = (why: string) => `${e.from} → ${e.to}${e.typeOnly ? " (type)" : ""}: ${why}`;
    if (e.from.startsWith("lib/")) {
      if (/^next(\/|$)/.test(e.spec)) out.push(line("lib/ never imports next/*"));
      if (e.to.startsWith("app/") || e.to.startsWith("components/")) out.push(line("lib/ never imports app/ or components/"));
      if (!e.to.startsWith("lib/")) continue;
      const [a, b] = [libArea(e.from), libArea(e.to)];
      if (a === b) continue;
      if (a === CLIENT_AREA) {
        if (!e.typeOnly) out.push(line("lib/client imports only types from the rest of lib/"));
        continue;
      }
      if (b === CLIENT_AREA) {
        out.push(line("nothing server-side imports lib/client"));
        continue;
      }
      const [ra, rb] = [RANK.get(a), RANK.get(b)];
      if (ra === undefined || rb === undefined) {
        out.push(line(`lib area '${ra === undefined ? a : b}' has no place in the layer order (tests/architecture.test.ts)`));
      } else if (rb > ra) {
        out.push(line(`upward: ${a} (rank ${ra}) imports ${b} (rank ${rb})`));
      } else if (rb === ra) {
        out.push(line(`peers: ${a} and ${b} never import each other`));
      }
    } else if (e.from.startsWith("components/") && e.to.startsWith("app/")) {
      out.push(line("components/ never import app/: pass server actions as props"));
    }
  }
  return out;
}

describe("architecture: imports go down", () => {
  it("finds the imports it checks (the parser sees static, re-export and dynamic imports)", () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(EDGES.some((e) => e.from === "lib/api/route.ts" && e.to === "lib/errors.ts")).toBe(true);
    const kinds = importsOf("instrumentation.ts").map((i) => i.spec);
    expect(kinds).toContain("./lib/bootstrap");
  });

  it("puts every lib/ area in the layer order", () => {
    const areas = new Set(FILES.filter((f) => f.startsWith("lib/")).map(libArea));
    areas.delete(CLIENT_AREA);
    expect([...areas].filter((a) => !RANK.has(a))).toEqual([]);
  });

  it("has no upward, peer or framework imports in lib/, and components/ never import app/", () => {
    expect(violations(EDGES)).toEqual([]);
  });

  it("hashes with sha256 in one place (lib/common.ts sha256Hex)", () => {
    const hashing = FILES.filter((f) => /createHash\(\s*["']sha256["']\s*\)/.test(fs.readFileSync(path.join(ROOT, f), "utf8")));
    expect(hashing).toEqual(["lib/common.ts"]);
  });

  it("writes the graph and recall once: no PostgreSQL twin file, only their engines' full-text and vector reads per engine", () => {
    const areas = FILES.filter((f) => /^lib\/(graph|recall)\//.test(f));
    expect(areas.filter((f) => f.endsWith("-pg.ts"))).toEqual([]);
    expect(areas.filter((f) => f.includes("/engines/")).sort()).toEqual(["lib/graph/engines/pg.ts", "lib/graph/engines/sqlite.ts", "lib/recall/engines/pg.ts", "lib/recall/engines/sqlite.ts"]);
  });

  it("makes every data table reachable by keyboard (on a phone it scrolls sideways in its own box, and axe requires a scrollable region to take focus)", () => {
    const tags = FILES.filter((f) => f.endsWith(".tsx")).flatMap((f) =>
      [...fs.readFileSync(path.join(ROOT, f), "utf8").matchAll(/<table\b[^>]*>/g)].map((m) => ({ file: f, tag: m[0] })),
    );
    const dataTables = tags.filter((t) => /className="data\b/.test(t.tag));
    expect(dataTables.length).toBeGreaterThan(10);
    expect(dataTables.filter((t) => !t.tag.includes("tabIndex={0}")).map((t) => `${t.file}: ${t.tag}`)).toEqual([]);
  });

  it("would catch an upward import (the check itself works)", () => {
    const bad: Edge[] = [
      { from: "lib/db/connection.ts", to: "lib/api/route.ts", spec: "../api/route", typeOnly: false },
      { from: "lib/recall/recall.ts", to: "lib/graph/remember.ts", spec: "../graph/remember", typeOnly: true },
      { from: "lib/index/search.ts", to: "lib/client/index.ts", spec: "../client", typeOnly: true },
      { from: "lib/client/index.ts", to: "lib/errors.ts", spec: "../errors", typeOnly: false },
      { from: "lib/metrics/health.ts", to: "next/server", spec: "next/server", typeOnly: false },
      { from: "lib/newarea/x.ts", to: "lib/errors.ts", spec: "../errors", typeOnly: false },
      { from: "components/nav.tsx", to: "app/_server/session.ts", spec: "@/app/_server/session", typeOnly: true },
    ];
    const fine: Edge[] = [
      { from: "lib/api/route.ts", to: "lib/auth/tokens.ts", spec: "../auth/tokens", typeOnly: false },
      { from: "lib/client/index.ts", to: "lib/index/search.ts", spec: "../index/search", typeOnly: true },
      { from: "components/nav.tsx", to: "lib/format.ts", spec: "@/lib/format", typeOnly: false },
    ];
    expect(violations([...bad, ...fine])).toEqual([
      "lib/db/connection.ts → lib/api/route.ts: upward: db (rank 2) imports api (rank 13)",
      "lib/recall/recall.ts → lib/graph/remember.ts (type): peers: recall and graph never import each other",
      "lib/index/search.ts → lib/client/index.ts (type): nothing server-side imports lib/client",
      "lib/client/index.ts → lib/errors.ts: lib/client imports only types from the rest of lib/",
      "lib/metrics/health.ts → next/server: lib/ never imports next/*",
      "lib/newarea/x.ts → lib/errors.ts: lib area 'newarea' has no place in the layer order (tests/architecture.test.ts)",
      "components/nav.tsx → app/_server/session.ts (type): components/ never import app/: pass server actions as props",
    ]);
  });
});
