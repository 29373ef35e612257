// Renames a declaration and every use of it the TypeScript language service finds (a property key, a field
// of a type, an export), as an editor's "rename symbol" does. Usage: tsx scripts/rename-symbol.ts FILE:LINE OLD NEW [FILE:LINE OLD NEW ...]
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const root = process.cwd();
const config = ts.parseJsonConfigFileContent(ts.readConfigFile(path.join(root, "tsconfig.json"), ts.sys.readFile).config, ts.sys, root);
const versions = new Map<string, number>();
const texts = new Map<string, string>();
const read = (f: string) => texts.get(f) ?? fs.readFileSync(f, "utf8");
const service = ts.createLanguageService({
  getCompilationSettings: () => ({ ...config.options, incremental: false }),
  getScriptFileNames: () => config.fileNames,
  getScriptVersion: (f) => String(versions.get(f) ?? 0),
  getScriptSnapshot: (f) => (fs.existsSync(f) ? ts.ScriptSnapshot.fromString(read(f)) : undefined),
  getCurrentDirectory: () => root,
  getDefaultLibFileName: ts.getDefaultLibFilePath,
  fileExists: ts.sys.fileExists,
  readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory,
});

const args = process.argv.slice(2);
for (let i = 0; i + 2 < args.length + 0; i += 3) {
  const [where, from, to] = [args[i], args[i + 1], args[i + 2]];
  const [file, line] = where.split(":");
  const abs = path.resolve(root, file);
  const text = read(abs);
  const lines = text.split("\n");
  const column = lines[Number(line) - 1]?.search(new RegExp(`\\b${from}\\b`));
  if (column === undefined || column < 0) throw new Error(`${from} is not on ${where}`);
  const offset = lines.slice(0, Number(line) - 1).reduce((n, l) => n + l.length + 1, 0) + column;
  const locations = service.findRenameLocations(abs, offset, false, false, { providePrefixAndSuffixTextForRename: true }) ?? [];
  if (locations.length === 0) throw new Error(`no rename locations for ${from} at ${where}`);
  const byFile = new Map<string, ts.RenameLocation[]>();
  for (const l of locations) byFile.set(l.fileName, [...(byFile.get(l.fileName) ?? []), l]);
  for (const [f, ls] of byFile) {
    let s = read(f);
    for (const l of ls.sort((a, b) => b.textSpan.start - a.textSpan.start)) {
      const replacement = `${l.prefixText ?? ""}${to}${l.suffixText ?? ""}`;
      s = s.slice(0, l.textSpan.start) + replacement + s.slice(l.textSpan.start + l.textSpan.length);
    }
    texts.set(f, s);
    versions.set(f, (versions.get(f) ?? 0) + 1);
  }
  console.log(`${from} → ${to}: ${locations.length} places in ${byFile.size} files`);
}
for (const [f, s] of texts) fs.writeFileSync(f, s);
