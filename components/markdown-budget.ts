/**
 * What a memory may cost to render as markdown (issue 14, finding 6).
 *
 * react-markdown (micromark) is far better than the old hand-written link
 * pattern, but it is not linear on everything: resolving emphasis, links and
 * adjacent text splices one event list per paragraph, so its work grows with
 * the square of the markup in a single paragraph (`*a` × 16 000 in one
 * paragraph: ~9 s), and nesting (`>` × 16 000) overflows the stack. Every
 * element also costs React time. So before anything is parsed, one linear
 * pass over the text estimates that work, and text over budget is shown as
 * plain text instead. The estimate may overcount (fenced code is counted as
 * if it were prose: telling a real fence from a fooled one needs the parser)
 * but never undercounts: no paragraph, heading or table cell spans a blank
 * line, so blank-line-separated blocks bound every inline run from above.
 */

/**
 * Characters that open, close or make inline constructs (CommonMark + GFM),
 * table cells, or GFM's bare autolinks (`a@b.c`, `http://`; `www.` is caught
 * at its dot).
 */
const MARK_CODES = new Set([..."!&*<>[\\]_`~|@:"].map((c) => c.charCodeAt(0)));
const DOT = 46;

/** `www.` ending at `i` (the dot), any case: a GFM autolink without a mark character. */
function endsWww(text: string, i: number): boolean {
  return i >= 3 && (text.charCodeAt(i - 1) | 32) === 119 && (text.charCodeAt(i - 2) | 32) === 119 && (text.charCodeAt(i - 3) | 32) === 119;
}

export const MARKDOWN_BUDGET = {
  /** Rendered elements, estimated as marks + non-blank lines: each costs parser, tree and React time. */
  maxWork: 2_000,
  /** Σ over blank-line-separated blocks of (marks in the block)²: 1 000 marks in one paragraph, or four of 500. */
  maxBlockSquares: 1_000_000,
  /** Leading `>`, list markers, digits and spaces on one line: nesting depth is bounded by it. */
  maxLinePrefix: 64,
} as const;

export type MarkdownWork = { work: number; blockSquares: number; longestLinePrefix: number };

const NEWLINE = 10;
const CR = 13;

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 12 || c === 11 || c === CR;
}

/** A character that can be part of a line's container prefix: blockquote and list markers, ordered-list digits, spaces. */
function isPrefix(c: number): boolean {
  return isSpace(c) || c === 62 /* > */ || c === 45 /* - */ || c === 42 /* * */ || c === 43 /* + */ || c === 46 /* . */ || c === 41 /* ) */ || (c >= 48 && c <= 57);
}

/** One pass, no regular expressions: the work `text` would cost as markdown. */
export function estimateMarkdownWork(text: string): MarkdownWork {
  let work = 0;
  let blockSquares = 0;
  let longestLinePrefix = 0;
  let blockMarks = 0;
  let lineMarks = 0;
  let lineBlank = true;
  let inPrefix = true;
  let prefix = 0;
  const endLine = () => {
    if (lineBlank) {
      blockSquares += blockMarks * blockMarks;
      blockMarks = 0;
    } else {
      work += 1 + lineMarks;
      blockMarks += lineMarks;
    }
    if (prefix > longestLinePrefix) longestLinePrefix = prefix;
    lineMarks = 0;
    lineBlank = true;
    inPrefix = true;
    prefix = 0;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === NEWLINE) {
      endLine();
      continue;
    }
    if (inPrefix && isPrefix(c)) prefix++;
    else inPrefix = false;
    if (!isSpace(c)) lineBlank = false;
    if (MARK_CODES.has(c) || (c === DOT && endsWww(text, i))) lineMarks++;
  }
  endLine();
  blockSquares += blockMarks * blockMarks;
  return { work, blockSquares, longestLinePrefix };
}

/** Null when the text may be rendered as markdown, else why not (for the note shown instead). */
export function markdownOverBudget(text: string): string | null {
  const w = estimateMarkdownWork(text);
  if (w.longestLinePrefix > MARKDOWN_BUDGET.maxLinePrefix) return `a line nests deeper than ${MARKDOWN_BUDGET.maxLinePrefix} levels of quotes or lists`;
  if (w.blockSquares > MARKDOWN_BUDGET.maxBlockSquares) return "a paragraph holds more markup than can be formatted quickly";
  if (w.work > MARKDOWN_BUDGET.maxWork) return `it has more than ${MARKDOWN_BUDGET.maxWork.toLocaleString("en-US")} lines and markup characters`;
  return null;
}
