import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_DOCS } from "@/lib/config";

/**
 * The README is the front door and docs/ holds the rest; keep them short where
 * promised, true to the code, and free of links that lead nowhere.
 */
const readme = fs.readFileSync("README.md", "utf8");
const DOCS = ["README.md", "SECURITY.md", ...fs.readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`), ...fs.readdirSync("bench/results").filter((f) => f.endsWith(".md")).map((f) => `bench/results/${f}`)];

/** Pages written on branches merged beside this one: linked already, checked once they exist. */

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^\p{L}\p{N} -]/gu, "")
    .replace(/ /g, "-");
}

function anchorsIn(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, "");
  return new Set([...withoutCode.matchAll(/^#{1,6} +(.+)$/gm)].map((m) => anchorOf(m[1])));
}

/** Relative links of a markdown page (`[text](target)`), code blocks and spans left out. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/i.test(t));
}

describe("docs", () => {
  it("README stays a front door: at most 300 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(300);
  });

  it.each(CONFIG_DOCS.map((d) => d.variable))("%s is documented in docs/configuration.md and .env.example", (variable) => {
    expect(fs.readFileSync("docs/configuration.md", "utf8")).toContain(`\`${variable}\``);
    expect(fs.readFileSync(".env.example", "utf8")).toMatch(new RegExp(`^#? ?${variable}=`, "m"));
  });

  it.each(DOCS)("every relative link in %s resolves (file and heading)", (page) => {
    const text = fs.readFileSync(page, "utf8");
    const broken: string[] = [];
    for (const link of relativeLinks(text)) {
      const [target, anchor] = link.split("#");
      const file = target ? path.posix.normalize(path.posix.join(path.posix.dirname(page), target)) : page;
      if (!fs.existsSync(file)) {
        broken.push(`${link} (no ${file})`);
        continue;
      }
      if (anchor && file.endsWith(".md") && !anchorsIn(fs.readFileSync(file, "utf8")).has(anchor)) broken.push(`${link} (no heading #${anchor} in ${file})`);
    }
    expect(broken).toEqual([]);
  });

  it("README's code map lists every lib/ area and top-level lib file", () => {
    const map = readme.slice(readme.indexOf("## Code map"));
    for (const e of fs.readdirSync("lib", { withFileTypes: true })) {
      if (e.isDirectory()) expect(map, `lib/${e.name}/`).toMatch(new RegExp(`^  ${e.name}/ `, "m"));
      else expect(map, `lib/${e.name}`).toContain(e.name);
    }
  });

  it("README links every page in docs/", () => {
    for (const f of fs.readdirSync("docs").filter((f) => f.endsWith(".md"))) expect(readme, f).toContain(`](docs/${f})`);
  });

  it("README's test command is what CI runs", () => {
    expect(readme).toContain("npm install && npm test");
    expect(fs.readFileSync(".ci/run", "utf8")).toMatch(/^npm install --no-audit --no-fund$[\s\S]*^npm test\b/m);
    expect(JSON.parse(fs.readFileSync("package.json", "utf8")).scripts.test).toBe("tsx scripts/test.ts");
  });
});
