import Link from "@/components/link";
import { stores } from "@/lib/stores/backend";
import { notFound } from "next/navigation";
import { findOrNullAsync } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { isMarkdownKind, ReaderDocument, ReaderMetadata, ReaderNeighbours, ReaderVector } from "@/components/search-reader";
import { storeNameSchema } from "@/lib/db/store-names";
import { chunkIdSchema } from "@/lib/index/ingest";
import { DEFAULT_SEARCH_MODE } from "@/lib/index/search";
import { searchFrom, searchHref } from "@/components/search-url";
import { vectorReadinessFor } from "@/lib/metrics/health";

type Props = { params: Promise<{ store: string; chunkId: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

/** A search hit in its document: every signed-in person may read every store; an unknown store or chunk is the friendly not-found page. */
export default async function SearchReaderPage({ params, searchParams }: Props) {
  await requireUser();
  const { store: rawStore, chunkId: rawChunkId } = await params;
  const store = storeNameSchema.safeParse(rawStore);
  const chunkId = chunkIdSchema.safeParse(rawChunkId);
  if (!store.success || !chunkId.success) notFound();
  // stores(): the PostgreSQL stores with DATABASE_URL (never DATA_DIR's then); an unknown store or chunk is not_found.
  const reader = await findOrNullAsync(() => stores().readChunk({ store: store.data, chunkId: chunkId.data }));
  if (!reader) notFound();

  const readiness = await vectorReadinessFor({ store: reader.store });
  const storeSearch = readiness.usable ? { usable: true as const } : { usable: false as const, message: readiness.message };
  const sp = await searchParams;
  const view = sp.view;
  // The search this chunk was opened from: the breadcrumb leads back to it, query and page included.
  const from = searchFrom(sp.from, { store: reader.store, mode: DEFAULT_SEARCH_MODE });
  const keepFrom = from ? `&from=${encodeURIComponent(searchHref(from).slice("/search?".length))}` : "";
  const markdown = isMarkdownKind(reader.document.kind);
  const formatted = markdown && view !== "text";
  const here = `/search/read/${encodeURIComponent(reader.store)}/${reader.chunk.chunkId}`;
  const plainHere = keepFrom ? `${here}?${keepFrom.slice(1)}` : here;
  return (
    <div className="space-y-4">
      <nav aria-label="Breadcrumb" className="text-sm text-slate-600">
        <Link className="text-blue-700 underline" href={`/search?store=${encodeURIComponent(reader.store)}`}>
          Search
        </Link>{" "}
        ›{" "}
        {from && (
          <>
            <Link className="text-blue-700 underline" href={searchHref(from)} data-testid="reader-back-to-search">
              results for “{from.q}”{from.page > 1 ? ` (page ${from.page})` : ""}
            </Link>{" "}
            ›{" "}
          </>
        )}
        <Link className="text-blue-700 underline" href={`/stores/${encodeURIComponent(reader.store)}`}>
          store {reader.store}
        </Link>
      </nav>
      <h1 className="break-all text-2xl font-semibold">{reader.document.path}</h1>
      <p className="text-sm text-slate-600">
        Chunk {reader.chunk.chunkIndex} (chunks are numbered from 0; this document has {reader.document.chunks}), marked in its document.{" "}
        {markdown &&
          (formatted ? (
            <Link className="text-blue-700 underline" href={`${here}?view=text${keepFrom}#chunk`}>
              Show as plain text
            </Link>
          ) : (
            <Link className="text-blue-700 underline" href={`${plainHere}#chunk`}>
              Show formatted
            </Link>
          ))}
      </p>
      <ReaderNeighbours reader={reader} from={from} />
      {/* minmax(0, …): a long line or a wide table scrolls inside its card instead of widening the page. */}
      <div className="grid grid-cols-[minmax(0,1fr)] gap-4 lg:grid-cols-[minmax(0,2fr)_minmax(0,1fr)]">
        <ReaderDocument reader={reader} formatted={formatted} />
        <ReaderMetadata reader={reader} />
      </div>
      <ReaderVector reader={reader} storeSearch={storeSearch} />
    </div>
  );
}
