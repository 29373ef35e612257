import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { CONFIG_DOCS } from "@/lib/config";

// The README and .env.example are how people configure the app; keep them true.
describe("docs", () => {
  const readme = fs.readFileSync("README.md", "utf8");
  const envExample = fs.readFileSync(".env.example", "utf8");
  it.each(CONFIG_DOCS.map((d) => d.variable))("%s is documented in README and .env.example", (variable) => {
    expect(readme).toContain(`\`${variable}\``);
    expect(envExample).toMatch(new RegExp(`^#? ?${variable}=`, "m"));
  });

  it("README's Layout lists every lib/ area and top-level lib file", () => {
    const layout = readme.slice(readme.indexOf("## Layout"));
    for (const e of fs.readdirSync("lib", { withFileTypes: true })) {
      if (e.isDirectory()) expect(layout, `lib/${e.name}/`).toMatch(new RegExp(`^  ${e.name}/ `, "m"));
      else expect(layout, `lib/${e.name}`).toContain(e.name);
    }
  });

  it("README's test command is what CI runs", () => {
    expect(readme).toContain("npm install && npm test");
    expect(fs.readFileSync(".ci/run", "utf8")).toMatch(/npm install[^\n]*\nnpm test/);
  });
});
