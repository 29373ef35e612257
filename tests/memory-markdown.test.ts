import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { estimateMarkdownWork, MARKDOWN_BUDGET } from "@/components/markdown-budget";
import { MEMORY_RENDER_MAX_CHARS, MemoryMarkdown } from "@/components/memory-markdown";

// Issue 14 finding 6: a memory is rendered on every view; no text may stall the server rendering it.
const render = (text: string, file?: string) => renderToStaticMarkup(createElement(MemoryMarkdown, { text, file }));
const KB200 = 200 * 1024;
const fill = (unit: string, size = KB200) => unit.repeat(Math.ceil(size / unit.length));

describe("memory markdown on hostile text", () => {
  // The old link pattern backtracked over every `[` from every `[`: 200 KB took 49 s.
  it("runs of `[` and `[a](` (200 KB) render promptly, as text, with no link", () => {
    for (const unit of ["[", "[a](", "![", "[a]("]) {
      const html = render(fill(unit));
      expect(html).toContain('data-testid="memory-markdown"');
      expect(html).not.toContain("<a ");
      expect(html).toContain('data-testid="memory-truncated"');
    }
  });

  it("markup the parser would be slow on is shown as plain text with a note: emphasis runs, deep nesting, long lists", () => {
    const hostile = {
      emphasis: fill("*a", 16_000), // one paragraph: quadratic in micromark (~9 s at 32 KB)
      nesting: ">".repeat(16_000) + " x", // 16 000 nested blockquotes overflow the stack
      lists: "- a\n".repeat(4_000), // 4 000 list items: seconds of React time
      autolinks: fill("a@b.cd ", 16_000),
    };
    for (const [name, text] of Object.entries(hostile)) {
      const html = render(text);
      expect(html, name).toContain('data-testid="memory-plain-text"');
      expect(html, name).not.toMatch(/<(em|blockquote|li|a) /);
      expect(html, name).not.toMatch(/<(em|blockquote|li)>/);
    }
  });

  it("renders at most the first 32 000 characters and says where the rest is", () => {
    const para = "A plain sentence about the project and its plans.\n\n";
    const html = render(fill(para, 1024 * 1024) + "THE-END", "memory/notes/big.md");
    expect(html).not.toContain("THE-END");
    expect(html).toContain('data-testid="memory-truncated"');
    expect(html).toContain("memory/notes/big.md");
    expect(html).toMatch(/showing the first [\d,]+ of [\d,]+ characters/);
    const shown = Number(/showing the first ([\d,]+)/.exec(html)![1].replaceAll(",", ""));
    expect(shown).toBeLessThanOrEqual(MEMORY_RENDER_MAX_CHARS);
    expect(shown).toBeGreaterThan(MEMORY_RENDER_MAX_CHARS * 0.9);
  });

  it("the work estimate never undercounts a paragraph: blocks split only at blank lines", () => {
    const oneParagraph = estimateMarkdownWork("*a".repeat(600) + "\n" + "*a".repeat(600));
    expect(oneParagraph.blockSquares).toBe(1200 * 1200);
    expect(oneParagraph.blockSquares).toBeGreaterThan(MARKDOWN_BUDGET.maxBlockSquares);
    expect(estimateMarkdownWork("*a".repeat(600) + "\n \t\n" + "*a".repeat(600)).blockSquares).toBe(2 * 600 * 600);
    expect(estimateMarkdownWork("> > > - 1. x").longestLinePrefix).toBe(11);
    expect(estimateMarkdownWork("see www.example.com or a@b.co").work).toBe(1 + 2);
  });
});

describe("memory markdown keeps ordinary markdown and its look", () => {
  it("headings one level down, lists, quotes, code, emphasis, GFM tables and strikethrough", () => {
    const html = render(
      [
        "# Title",
        "## Section",
        "Some **bold**, _em_ and `code` with ~~old~~ text.",
        "- one\n- two",
        "1. first\n2. second",
        "> quoted",
        "```\nconst x = 1 < 2;\n```",
        "| a | b |\n|---|---|\n| 1 | 2 |",
      ].join("\n\n"),
    );
    expect(html).toContain('<h2 class="text-xl font-semibold">Title</h2>');
    expect(html).toContain('<h3 class="text-lg font-semibold">Section</h3>');
    expect(html).toContain("<strong>bold</strong>");
    expect(html).toContain("<em>em</em>");
    expect(html).toContain('<code class="rounded bg-slate-100 px-1 font-mono text-xs">code</code>');
    expect(html).toContain("<del>old</del>");
    expect(html).toMatch(/<ul class="list-disc pl-6">\s*<li>one<\/li>\s*<li>two<\/li>/);
    expect(html).toMatch(/<ol class="list-decimal pl-6">\s*<li>first<\/li>/);
    expect(html).toMatch(/<blockquote class="border-l-4 border-slate-300 pl-3 text-slate-600">\s*<p>quoted<\/p>/);
    expect(html).toContain('<pre tabindex="0" class="overflow-x-auto rounded bg-slate-900 p-3 font-mono text-xs text-slate-100">const x = 1 &lt; 2;\n</pre>');
    expect(html).toContain("<table");
    expect(html).toContain('<td class="border border-slate-200 px-2 py-1">2</td>');
  });

  it("links only to http(s) and mailto; images are never fetched; raw HTML is text", () => {
    const html = render(
      [
        "[web](https://example.com/a) [mail](mailto:a@example.com) [js](javascript:alert(1)) [data](data:text/html,x) [rel](/admin)",
        "![diagram](https://example.com/d.png) ![local](file:///etc/passwd)",
        '<script>alert(1)</script><img src=x onerror="alert(1)">',
      ].join("\n\n"),
    );
    expect(html).toContain('<a href="https://example.com/a" rel="noopener noreferrer nofollow" target="_blank" class="text-blue-700 underline">web</a>');
    expect(html).toContain('<a href="mailto:a@example.com"');
    for (const bad of ["javascript:", "data:text", 'href="/admin"', "file:///"]) expect(html).not.toContain(bad);
    expect(html).toContain("<span>js</span>");
    expect(html).not.toContain("<img");
    expect(html).toContain('<a href="https://example.com/d.png" rel="noopener noreferrer nofollow" target="_blank" class="text-blue-700 underline">[image: diagram]</a>');
    expect(html).toContain("<span>[image: local]</span>");
    expect(html).not.toContain("<script");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
  });
});
