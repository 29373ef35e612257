import type { ReactNode } from "react";

/**
 * Markdown to React elements, never to HTML strings: memory content cannot
 * run script or inject markup. Links keep only http(s) and mailto targets.
 */
export function MemoryMarkdown({ text }: { text: string }) {
  return <div className="space-y-3 text-sm leading-6" data-testid="memory-markdown">{renderBlocks(text)}</div>;
}

function safeHref(href: string): string | null {
  return /^(https?:|mailto:)/i.test(href.trim()) ? href.trim() : null;
}

function renderInline(text: string, key: string): ReactNode[] {
  const out: ReactNode[] = [];
  const re = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*]+\*|_[^_]+_)|(\[[^\]]+\]\([^)\s]+\))/g;
  let last = 0;
  let i = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const token = m[0];
    const k = `${key}-${i++}`;
    if (m[1]) out.push(<code key={k} className="rounded bg-slate-100 px-1 font-mono text-xs">{token.slice(1, -1)}</code>);
    else if (m[2]) out.push(<strong key={k}>{token.slice(2, -2)}</strong>);
    else if (m[3]) out.push(<em key={k}>{token.slice(1, -1)}</em>);
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token)!;
      const safe = safeHref(href);
      out.push(safe ? <a key={k} href={safe} rel="noopener noreferrer nofollow" target="_blank" className="text-blue-700 underline">{label}</a> : <span key={k}>{label}</span>);
    }
    last = m.index + token.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function renderBlocks(text: string): ReactNode[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const blocks: ReactNode[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const key = `b${i}`;
    if (/^\s*(```|~~~)/.test(line)) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !/^\s*(```|~~~)/.test(lines[i])) body.push(lines[i++]);
      i++;
      blocks.push(<pre key={key} className="overflow-x-auto rounded bg-slate-900 p-3 font-mono text-xs text-slate-100">{body.join("\n")}</pre>);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = heading[1].length;
      const cls = ["text-xl font-semibold", "text-lg font-semibold", "text-base font-semibold", "font-semibold", "font-medium", "font-medium"][level - 1];
      const Tag = `h${Math.min(level + 1, 6)}` as "h2";
      blocks.push(<Tag key={key} className={cls}>{renderInline(heading[2], key)}</Tag>);
      i++;
      continue;
    }
    if (/^\s*([-*+]|\d+\.)\s+/.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const items: ReactNode[] = [];
      while (i < lines.length && /^\s*([-*+]|\d+\.)\s+/.test(lines[i])) {
        items.push(<li key={`${key}-${i}`}>{renderInline(lines[i].replace(/^\s*([-*+]|\d+\.)\s+/, ""), `${key}-${i}`)}</li>);
        i++;
      }
      blocks.push(ordered ? <ol key={key} className="list-decimal pl-6">{items}</ol> : <ul key={key} className="list-disc pl-6">{items}</ul>);
      continue;
    }
    if (/^>\s?/.test(line)) {
      const quote: string[] = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) quote.push(lines[i++].replace(/^>\s?/, ""));
      blocks.push(<blockquote key={key} className="border-l-4 border-slate-300 pl-3 text-slate-600">{renderInline(quote.join(" "), key)}</blockquote>);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i].trim() !== "" && !/^(#{1,6}\s|\s*(```|~~~)|\s*([-*+]|\d+\.)\s+|>)/.test(lines[i])) para.push(lines[i++]);
    blocks.push(<p key={key}>{renderInline(para.join(" "), key)}</p>);
  }
  return blocks;
}
