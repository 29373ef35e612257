import { requireUser } from "@/app/_server/session";
import { SearchPanel } from "@/components/search-panel";
import { pickStore } from "@/app/_server/pages";
import { searchAction } from "./actions";

export default async function SearchPage() {
  await requireUser();
  const { store, stores } = pickStore();
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Search</h1>
      <p className="text-sm text-slate-600">Search a store&apos;s documents and memories: hybrid (bm25 fused with vector similarity, the measured default), full-text only, or vector only. Your words are matched as words: operators and quotes have no special meaning here. Tick explain to see why each hit ranks where it does.</p>
      <SearchPanel stores={stores} defaultStore={store} action={searchAction} />
    </div>
  );
}
