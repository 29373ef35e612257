import type Database from "better-sqlite3";

/** Queries from the store's own vocabulary: its commonest words paired, a rare word beside a common one, longer ORs, and a few advanced expressions. */
export function fullTextQueriesOf(db: Database.Database): { q: string; syntax: "plain" | "fts5" }[] {
  db.exec("create virtual table if not exists temp.same_vocab using fts5vocab(main, chunks_fts, 'row')");
  const words = db.prepare("select term from temp.same_vocab where length(term) >= 4 and term glob '[a-z]*' and term not glob '*[0-9]*' order by doc desc, term limit 40").pluck().all() as string[];
  const rare = db.prepare("select term from temp.same_vocab where length(term) >= 6 and term glob '[a-z]*' and doc between 3 and 50 order by term limit 60").pluck().all() as string[];
  const out: { q: string; syntax: "plain" | "fts5" }[] = [];
  for (let i = 0; i < words.length; i += 2) out.push({ q: `${words[i]} ${words[i + 1]}`, syntax: "plain" });
  for (let i = 0; i < 20; i++) out.push({ q: words[i], syntax: "plain" });
  for (let i = 0; i < 60; i++) out.push({ q: `${rare[i]} ${words[i % words.length]}`, syntax: "plain" });
  for (let i = 0; i < 30; i++) out.push({ q: `${words[i]} ${words[(i + 7) % words.length]} ${words[(i + 13) % words.length]}${i % 2 ? ` ${rare[i]}` : ""}`, syntax: "plain" });
  for (let i = 0; i < 20; i++) out.push({ q: `${words[(3 * i) % words.length]} ${words[(3 * i + 1) % words.length]} ${words[(3 * i + 2) % words.length]} ${words[(3 * i + 5) % words.length]}`, syntax: "plain" });
  for (let i = 0; i < 10; i++) out.push({ q: `${words[i]}-${words[i + 1]} ${words[i + 2]}`, syntax: "plain" });
  for (let i = 0; i < 10; i++) out.push({ q: `${words[i]} NOT ${words[i + 3]}`, syntax: "fts5" });
  return out;
}

