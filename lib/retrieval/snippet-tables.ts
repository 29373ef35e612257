/**
 * Markdown table syntax is layout, not words: a snippet cut from a table
 * shows its cells' text, never `| --- |`. Alignment rows (dashes and colons
 * between pipes, whole or cut by the snippet window) go; the pipes between
 * cells become a middle dot, and a line's leading and trailing pipes go.
 * Escaped pipes (`\|`) are a cell's own text and stay as `|`.
 * Highlight marks pass through untouched (they are not `|`, `-` or `:`).
 */
const ESCAPED_PIPE = "\uE002";

export function stripTableSyntax(text: string): string {
  if (!text.includes("|")) return text;
  return (
    text
      .replaceAll("\\|", ESCAPED_PIPE)
      // An alignment row or a piece of one: two or more dash cells, or one dash cell with a pipe beside it.
      .replace(/\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*(?=\s|$))?/g, " ")
      .replace(/(?:^|(?<=\s)):?-{3,}:?[ \t]*\|/gm, " ")
      // A row's outer pipes, then the pipes between its cells.
      .replace(/^[ \t]*\|/gm, "")
      .replace(/\|[ \t]*$/gm, "")
      .replace(/[ \t]*\|[ \t]*/g, " · ")
      .replaceAll(ESCAPED_PIPE, "|")
  );
}
