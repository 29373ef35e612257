import { sha256Hex } from "../common";
import { frontmatterLength } from "./frontmatter";

/**
 * Deterministic chunking. Any change to these rules must bump
 * CHUNKING_VERSION (and ship a migration note): chunks of an older version are
 * reported stale by verify and rebuilt by the next reindex.
 */
export const CHUNKING_VERSION = 1;

export type ChunkKind = "memory" | "markdown" | "code" | "text";

export type Chunk = {
  chunkIndex: number;
  chunkId: string;
  chunkSha256: string;
  startByte: number;
  endByte: number;
  text: string;
};

const RULES = {
  /** Markdown: sections packed up to this many bytes; a heading starts a new chunk once this much is gathered. */
  markdownTargetBytes: 1800,
  markdownMinBytesBeforeHeading: 300,
  markdownOverlapBytes: 200,
  /** Code and other text: windows of lines. */
  lineWindow: 60,
  lineOverlap: 8,
  maxChunkBytes: 3000,
};

type Line = { start: number; end: number; bytes: number; heading: boolean };

export function chunkIdFor({ path, chunkIndex, chunkSha256 }: { path: string; chunkIndex: number; chunkSha256: string }): string {
  return sha256Hex(`${CHUNKING_VERSION}\0${path}\0${chunkIndex}\0${chunkSha256}`).slice(0, 32);
}

/** Split into lines from `from` (each keeps its newline); a line longer than maxChunkBytes is cut at code-point boundaries. */
function splitLines(text: string, markdown: boolean, from: number): Line[] {
  const lines: Line[] = [];
  let inFence = false;
  let pos = from;
  while (pos < text.length) {
    const nl = text.indexOf("\n", pos);
    const end = nl === -1 ? text.length : nl + 1;
    const raw = text.slice(pos, end);
    let heading = false;
    if (markdown) {
      if (/^\s{0,3}(```|~~~)/.test(raw)) inFence = !inFence;
      else if (!inFence && /^#{1,6}\s/.test(raw)) heading = true;
    }
    const bytes = Buffer.byteLength(raw, "utf8");
    if (bytes <= RULES.maxChunkBytes) {
      lines.push({ start: pos, end, bytes, heading });
    } else {
      let s = pos;
      let first = true;
      while (s < end) {
        let e = s;
        let b = 0;
        while (e < end) {
          const cp = text.codePointAt(e)!;
          const units = cp > 0xffff ? 2 : 1;
          const cb = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
          if (b + cb > RULES.maxChunkBytes) break;
          b += cb;
          e += units;
        }
        lines.push({ start: s, end: e, bytes: b, heading: heading && first });
        first = false;
        s = e;
      }
    }
    pos = end;
  }
  return lines;
}

/** Line ranges [from, to) of each chunk. */
function windows(lines: Line[], markdown: boolean): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  while (from < lines.length) {
    let to = from;
    let bytes = 0;
    while (to < lines.length) {
      const l = lines[to];
      if (to > from && bytes + l.bytes > (markdown ? RULES.markdownTargetBytes : RULES.maxChunkBytes)) break;
      if (!markdown && to - from >= RULES.lineWindow) break;
      if (markdown && to > from && l.heading && bytes >= RULES.markdownMinBytesBeforeHeading) break;
      bytes += l.bytes;
      to++;
    }
    out.push([from, to]);
    if (to >= lines.length) break;
    // A chunk that stopped at a heading starts the next section cleanly; otherwise overlap.
    if (markdown && lines[to].heading) {
      from = to;
      continue;
    }
    let next = to;
    if (markdown) {
      let ob = 0;
      while (next - 1 > from && ob + lines[next - 1].bytes <= RULES.markdownOverlapBytes) ob += lines[--next].bytes;
    } else {
      // Overlap at most a quarter of the window, so short windows of long lines do not repeat.
      next = to - Math.min(RULES.lineOverlap, Math.floor((to - from) / 4));
    }
    from = next;
  }
  return out;
}

/**
 * Chunk a document. Byte offsets index the UTF-8 bytes of `text` exactly
 * (callers decode with the BOM kept, so they index the file too). A memory's
 * frontmatter is metadata (its memories row: tags, summary, dates), never
 * chunk text: its chunks start at the body, at the body's byte offset.
 */
export function chunkDocument({ path, kind, text }: { path: string; kind: ChunkKind; text: string }): Chunk[] {
  const markdown = kind === "markdown" || kind === "memory";
  const bodyStart = kind === "memory" ? frontmatterLength(text) : 0;
  const lines = splitLines(text, markdown, bodyStart);
  const byteStart: number[] = new Array(lines.length + 1);
  byteStart[0] = bodyStart === 0 ? 0 : Buffer.byteLength(text.slice(0, bodyStart), "utf8");
  for (let i = 0; i < lines.length; i++) byteStart[i + 1] = byteStart[i] + lines[i].bytes;
  const chunks: Chunk[] = [];
  for (const [from, to] of windows(lines, markdown)) {
    const slice = text.slice(lines[from].start, lines[to - 1].end);
    if (slice.trim() === "") continue;
    const chunkSha256 = sha256Hex(slice);
    const chunkIndex = chunks.length;
    chunks.push({ chunkIndex, chunkId: chunkIdFor({ path, chunkIndex, chunkSha256 }), chunkSha256, startByte: byteStart[from], endByte: byteStart[to], text: slice });
  }
  return chunks;
}
