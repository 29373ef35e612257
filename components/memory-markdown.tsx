import { isValidElement, type ReactNode } from "react";
import Markdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import { markdownOverBudget } from "./markdown-budget";

/**
 * Memory bodies are rendered up to this many characters: react-markdown and
 * React cost about 10-20 µs a character of ordinary prose, so this keeps a
 * page under a few hundred milliseconds of server time (issue 14 finding 6).
 */
export const MEMORY_RENDER_MAX_CHARS = 32_000;

const SAFE_URL = /^(?:https?:|mailto:)/i;

/** Only http(s) and mailto survive; anything else (javascript:, data:, relative, fragments) becomes no URL. */
export function safeUrl(url: string): string | undefined {
  const trimmed = url.trim();
  return SAFE_URL.test(trimmed) ? trimmed : undefined;
}

// Every element the renderer may produce; anything else is unwrapped to its text.
const ALLOWED_ELEMENTS = [
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "em", "strong", "del",
  "a", "img", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "input",
];

const HEADING_CLASSES = ["text-xl font-semibold", "text-lg font-semibold", "text-base font-semibold", "font-semibold", "font-medium", "font-medium"];

// Headings sit one level below the page's own h1/h2, as before.
function heading(level: number): Components["h1"] {
  const Tag = `h${Math.min(level + 1, 6)}` as "h2";
  const className = HEADING_CLASSES[level - 1];
  return function MemoryHeading({ children }) {
    return <Tag className={className}>{children}</Tag>;
  };
}

/** The text inside a code block: `pre` wraps a `code` element whose inline styling would clash with the block's. */
function codeBlockText(children: ReactNode): ReactNode {
  return isValidElement<{ children?: ReactNode }>(children) ? children.props.children : children;
}

// `node` is dropped from every props object: react-markdown passes the syntax tree node, which is not a DOM attribute.
const COMPONENTS: Components = {
  h1: heading(1),
  h2: heading(2),
  h3: heading(3),
  h4: heading(4),
  h5: heading(5),
  h6: heading(6),
  p: ({ children }) => <p>{children}</p>,
  ul: ({ children }) => <ul className="list-disc pl-6">{children}</ul>,
  ol: ({ children, start }) => (
    <ol className="list-decimal pl-6" start={start}>
      {children}
    </ol>
  ),
  li: ({ children }) => <li>{children}</li>,
  blockquote: ({ children }) => <blockquote className="border-l-4 border-slate-300 pl-3 text-slate-600">{children}</blockquote>,
  pre: ({ children }) => <pre tabIndex={0} className="overflow-x-auto rounded bg-slate-900 p-3 font-mono text-xs text-slate-100">{codeBlockText(children)}</pre>,
  code: ({ children }) => <code className="rounded bg-slate-100 px-1 font-mono text-xs">{children}</code>,
  em: ({ children }) => <em>{children}</em>,
  strong: ({ children }) => <strong>{children}</strong>,
  del: ({ children }) => <del>{children}</del>,
  hr: () => <hr className="border-slate-200" />,
  br: () => <br />,
  a: ({ href, children }) => {
    const safe = href ? safeUrl(href) : undefined;
    return safe ? (
      <a href={safe} rel="noopener noreferrer nofollow" target="_blank" className="text-blue-700 underline">
        {children}
      </a>
    ) : (
      <span>{children}</span>
    );
  },
  // Never fetched: an image is its alt text, linked to its source when that is http(s).
  img: ({ src, alt }) => {
    const label = `image: ${alt || "untitled"}`;
    const safe = typeof src === "string" ? safeUrl(src) : undefined;
    return safe ? (
      <a href={safe} rel="noopener noreferrer nofollow" target="_blank" className="text-blue-700 underline">
        [{label}]
      </a>
    ) : (
      <span>[{label}]</span>
    );
  },
  table: ({ children }) => (
    <div tabIndex={0} className="overflow-x-auto focus-visible:outline-none focus-visible:ring-2 focus-visible:ring-sky-600">
      <table className="min-w-full border-collapse text-left text-xs">{children}</table>
    </div>
  ),
  thead: ({ children }) => <thead className="bg-slate-50">{children}</thead>,
  tbody: ({ children }) => <tbody>{children}</tbody>,
  tr: ({ children }) => <tr>{children}</tr>,
  th: ({ children }) => <th className="border border-slate-200 px-2 py-1 font-semibold">{children}</th>,
  td: ({ children }) => <td className="border border-slate-200 px-2 py-1">{children}</td>,
  // GFM task list items: a read-only checkbox.
  input: ({ type, checked }) => (type === "checkbox" ? <input type="checkbox" checked={Boolean(checked)} disabled readOnly className="mr-1 align-middle" /> : null),
};

/**
 * Markdown to React elements, never to HTML strings: memory content cannot
 * run script or inject markup. Raw HTML in the text is shown as text, links
 * keep only http(s) and mailto targets, and images are never fetched. Only
 * the first MEMORY_RENDER_MAX_CHARS characters are rendered, and text whose
 * markup would be slow to parse (see markdown-budget) is shown as plain text.
 */
export function MemoryMarkdown({ text, file }: { text: string; file?: string }) {
  const truncated = text.length > MEMORY_RENDER_MAX_CHARS;
  // Cut at a line end where one is near, so the last rendered block is whole.
  const cut = truncated ? text.lastIndexOf("\n", MEMORY_RENDER_MAX_CHARS) : -1;
  const shown = truncated ? text.slice(0, cut > MEMORY_RENDER_MAX_CHARS * 0.9 ? cut : MEMORY_RENDER_MAX_CHARS) : text;
  const plainBecause = markdownOverBudget(shown);
  return (
    <div className="space-y-3 text-sm leading-6" data-testid="memory-markdown">
      {plainBecause ? (
        <>
          <p role="note" className="rounded border border-amber-300 bg-amber-50 px-3 py-2 text-xs text-amber-900" data-testid="memory-plain-text">
            Shown as plain text: {plainBecause}.
          </p>
          <pre className="whitespace-pre-wrap break-words font-mono text-xs">{shown}</pre>
        </>
      ) : (
        <Markdown remarkPlugins={[remarkGfm]} allowedElements={ALLOWED_ELEMENTS} unwrapDisallowed urlTransform={safeUrl} components={COMPONENTS}>
          {shown}
        </Markdown>
      )}
      {truncated && (
        <p role="note" className="rounded border border-amber-300 bg-amber-50 px-3 py-2 text-xs text-amber-900" data-testid="memory-truncated">
          Truncated: showing the first {shown.length.toLocaleString("en-US")} of {text.length.toLocaleString("en-US")} characters. Open the raw file
          {file ? <span className="font-mono"> {file}</span> : null} in the store&apos;s memory folder to read the rest.
        </p>
      )}
    </div>
  );
}
