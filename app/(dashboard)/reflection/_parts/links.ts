/** Where each reflection item lives, so every name that refers to one links to it. */
const base = (store: string) => `/reflection/${encodeURIComponent(store)}`;

export const reflectionHref = {
  page: (store: string) => `/reflection?store=${encodeURIComponent(store)}`,
  trace: (store: string, id: number) => `${base(store)}/traces/${id}`,
  learning: (store: string, id: number) => `${base(store)}/learnings/${id}`,
  recall: (store: string, id: number) => `${base(store)}/recalls/${id}`,
  hit: (store: string, hit: { artifact: "trace" | "learning"; refId: number }) => (hit.artifact === "trace" ? reflectionHref.trace(store, hit.refId) : reflectionHref.learning(store, hit.refId)),
  workingMemory: (store: string) => `${base(store)}/working-memory`,
};
