import Link from "@/components/link";
import { formatBytes, formatTime } from "@/lib/format";
import type { ChunkReader, ReaderNeighbour, VectorState } from "@/lib/index/reader";
import { frontmatterLength } from "@/lib/index/frontmatter";
import { MemoryMarkdown } from "./memory-markdown";
import { readerHref, type SearchUrlState } from "./search-url";

const STATE_LABELS: Record<VectorState, string> = {
  embedded: "embedded",
  stale: "drifted: made from older text",
  other_model: "drifted: another model",
  pending: "not embedded yet: queued",
  parked: "not embedded: embedding failed",
  not_embedded: "not embedded",
};

const STATE_CLASSES: Record<VectorState, string> = {
  embedded: "bg-emerald-100 text-emerald-800",
  stale: "bg-amber-100 text-amber-800",
  other_model: "bg-amber-100 text-amber-800",
  pending: "bg-slate-100 text-slate-700",
  parked: "bg-red-100 text-red-800",
  not_embedded: "bg-slate-100 text-slate-700",
};

/** True when the document reads best as formatted markdown (memories and markdown files). */
export function isMarkdownKind(kind: string): boolean {
  return kind === "memory" || kind === "markdown";
}

function withoutFrontmatter(t: ChunkReader["text"]): ChunkReader["text"] {
  if (t.before.trim() !== "") return { ...t, before: t.before.slice(frontmatterLength(t.before)) };
  return { ...t, chunk: t.chunk.slice(frontmatterLength(t.chunk)) };
}

function Omitted({ bytes, where }: { bytes: number; where: "before" | "after" }) {
  if (bytes === 0) return null;
  return (
    <p role="note" className="text-xs text-slate-500" data-testid={`reader-omitted-${where}`}>
      {formatBytes(bytes)} of the document {where === "before" ? "before" : "after"} this is not shown.
    </p>
  );
}

/**
 * The document around the chunk, the chunk marked. Always text or
 * react-markdown elements, never HTML from the index: markup in a document
 * shows as the characters it is made of.
 */
export function ReaderDocument({ reader, formatted }: { reader: ChunkReader; formatted: boolean }) {
  // A memory's frontmatter is metadata (shown beside, under "Document and chunk"), never rendered as body:
  // chunks no longer hold it, and a document indexed before that shows its body only.
  const text = reader.document.kind === "memory" && reader.text.omittedBefore === 0 ? withoutFrontmatter(reader.text) : reader.text;
  return (
    <section className="card min-w-0 space-y-2" aria-labelledby="reader-document-heading" data-testid="reader-document">
      <h2 id="reader-document-heading" className="text-lg font-medium">
        Document
      </h2>
      <Omitted bytes={text.omittedBefore} where="before" />
      {formatted ? (
        <div className="space-y-3">
          {text.before.trim() && <MemoryMarkdown text={text.before} />}
          <div id="chunk" className="scroll-mt-4 rounded border-l-4 border-yellow-400 bg-yellow-50 p-2" aria-label={`Chunk ${reader.chunk.chunkIndex}`} role="region" data-testid="reader-chunk">
            <MemoryMarkdown text={text.chunk} />
          </div>
          {text.after.trim() && <MemoryMarkdown text={text.after} />}
        </div>
      ) : (
        <pre tabIndex={0} className="max-h-[70vh] overflow-auto whitespace-pre-wrap break-words font-mono text-xs text-slate-700">
          {text.before}
          <mark id="chunk" className="scroll-mt-4 bg-yellow-200 text-slate-900" aria-label={`Chunk ${reader.chunk.chunkIndex}`} role="region" data-testid="reader-chunk">
            {text.chunk}
          </mark>
          {text.after}
        </pre>
      )}
      <Omitted bytes={text.omittedAfter} where="after" />
    </section>
  );
}

function NeighbourLink({ store, n, dir, from }: { store: string; n: ReaderNeighbour | null; dir: "prev" | "next"; from: SearchUrlState | null }) {
  if (!n) return <p className="text-sm text-slate-500">{dir === "prev" ? "This is the first chunk." : "This is the last chunk."}</p>;
  return (
    <Link href={readerHref({ store, chunkId: n.chunkId, from })} rel={dir} className="block rounded border border-slate-200 p-2 text-sm hover:bg-slate-50" data-testid={`reader-${dir}`}>
      <span className="font-medium text-blue-700 underline">{dir === "prev" ? `← Chunk ${n.chunkIndex}` : `Chunk ${n.chunkIndex} →`}</span>
      <span className="mt-1 block text-xs text-slate-600">{n.preview}</span>
    </Link>
  );
}

/** The chunks before and after; stepping through them keeps the search the reader was opened from. */
export function ReaderNeighbours({ reader, from = null }: { reader: ChunkReader; from?: SearchUrlState | null }) {
  return (
    <nav aria-label="Neighbouring chunks" className="grid gap-2 sm:grid-cols-2">
      <NeighbourLink store={reader.store} n={reader.neighbours.prev} dir="prev" from={from} />
      <NeighbourLink store={reader.store} n={reader.neighbours.next} dir="next" from={from} />
    </nav>
  );
}

function Field({ name, children, mono = false }: { name: string; children: React.ReactNode; mono?: boolean }) {
  return (
    <div className="min-w-0">
      <dt className="text-xs text-slate-500">{name}</dt>
      <dd className={mono ? "break-all font-mono text-xs" : "break-words"}>{children}</dd>
    </div>
  );
}

export function ReaderMetadata({ reader }: { reader: ChunkReader }) {
  const { document: d, chunk: c } = reader;
  return (
    <section className="card min-w-0 space-y-2 self-start text-sm" aria-labelledby="reader-meta-heading" data-testid="reader-metadata">
      <h2 id="reader-meta-heading" className="text-lg font-medium">
        Document and chunk
      </h2>
      <dl className="grid gap-2 sm:grid-cols-2">
        <Field name="path" mono>
          {d.path}
        </Field>
        <Field name="kind">
          {d.kind} · {d.origin === "api" ? "sent by the API" : "a file"}
        </Field>
        {d.memory && (
          <>
            <Field name="tags">{d.memory.tags.length ? d.memory.tags.join(", ") : "none"}</Field>
            <Field name="memory">
              <Link className="text-blue-700 underline" href={`/memories?store=${encodeURIComponent(reader.store)}&path=${encodeURIComponent(d.memory.path)}`}>
                {d.memory.path}
              </Link>
              {d.memory.summary && <span className="block text-xs text-slate-600">{d.memory.summary}</span>}
            </Field>
          </>
        )}
        <Field name="updated">{formatTime(d.updatedAt)}</Field>
        <Field name="indexed">{formatTime(d.indexedAt)}</Field>
        <Field name="size">
          {formatBytes(d.bytes)} · {d.chunks} {d.chunks === 1 ? "chunk" : "chunks"}
        </Field>
        <Field name="document sha256" mono>
          {d.sha256}
        </Field>
        <Field name="chunk">
          index {c.chunkIndex} of 0–{d.chunks - 1} (bytes {c.startByte}–{c.endByte})
        </Field>
        <Field name="chunk id" mono>
          {c.chunkId}
        </Field>
        <Field name="chunk sha256" mono>
          {c.chunkSha256}
        </Field>
        <Field name="chunking version">
          {c.chunkingVersion}
          {c.stale && <span className="ml-1 text-amber-700">(older rules: the next reindex rebuilds it)</span>}
        </Field>
      </dl>
    </section>
  );
}

/** Whether vector search can answer on this store at all right now (checkVectorReadiness), whatever this chunk's vector. */
export type StoreVectorSearch = { usable: true } | { usable: false; message: string };

export function ReaderVector({ reader, storeSearch }: { reader: ChunkReader; storeSearch: StoreVectorSearch }) {
  const v = reader.vector;
  return (
    <section className="card space-y-2 text-sm" aria-labelledby="reader-vector-heading" data-testid="reader-vector">
      <h2 id="reader-vector-heading" className="text-lg font-medium">
        Vector
      </h2>
      <p>
        <span className={`rounded px-2 py-0.5 text-xs font-medium ${STATE_CLASSES[v.state]}`} data-testid="reader-vector-state">
          {STATE_LABELS[v.state]}
        </span>{" "}
        <span className="text-slate-700">{v.explanation}</span>
      </p>
      {!storeSearch.usable && (
        <p className="rounded bg-amber-50 p-2 text-xs text-amber-800" data-testid="reader-vector-search-off">
          Vector search on this store is off right now ({storeSearch.message}): searches answer with full-text only.
        </p>
      )}
      <p className="text-xs text-slate-600">
        Serving model: {v.servingModel ? `${v.servingModel.provider}:${v.servingModel.model} (${v.servingModel.id}, ${v.servingModel.dimension} dimensions)` : "none yet (the store has no vectors)"}
      </p>
      {v.queue && (
        <p className="text-xs text-slate-600">
          Queued {formatTime(v.queue.enqueuedAt)} · {v.queue.attempts} attempt(s){v.queue.lastError ? ` · last error: ${v.queue.lastError}` : ""}
        </p>
      )}
      {v.vectors.length > 0 && (
        <div className="overflow-x-auto">
          <table tabIndex={0} className="data text-xs" data-testid="reader-vectors">
            <caption className="text-left text-xs text-slate-500">Vectors stored for this chunk</caption>
            <thead>
              <tr>
                <th>Model</th>
                <th>Dimensions</th>
                <th>Input hash</th>
                <th>Made</th>
                <th>Serves search</th>
              </tr>
            </thead>
            <tbody>
              {v.vectors.map((x) => (
                <tr key={x.fingerprintId}>
                  <td className="font-mono">{x.model ?? x.fingerprintId}</td>
                  <td>{x.dimension}</td>
                  <td className="font-mono">
                    {x.inputHash.slice(0, 16)}… {x.matchesText ? "(this text)" : "(older text)"}
                  </td>
                  <td>{formatTime(x.createdAt)}</td>
                  <td>{x.serving && x.matchesText ? "yes" : "no"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="overflow-x-auto">
        {v.provenance.length === 0 ? (
          <p className="text-xs text-slate-600" data-testid="reader-provenance-none">
            The governance ledger has no provenance for a vector of this chunk.
          </p>
        ) : (
          <table tabIndex={0} className="data text-xs" data-testid="reader-provenance">
            <caption className="text-left text-xs text-slate-500">Provenance (governance ledger)</caption>
            <thead>
              <tr>
                <th>Model</th>
                <th>Model version</th>
                <th>Input hash</th>
                <th>Chunking</th>
                <th>Recorded</th>
                <th>By</th>
              </tr>
            </thead>
            <tbody>
              {v.provenance.map((p, i) => (
                <tr key={i}>
                  <td className="font-mono">{p.modelName}</td>
                  <td className="font-mono">{p.modelVersion}</td>
                  <td className="font-mono">{p.inputHash.slice(0, 16)}…</td>
                  <td>{p.chunkingVersion ?? "—"}</td>
                  <td>{formatTime(p.createdAt)}</td>
                  <td>{p.recordedBy}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </section>
  );
}
