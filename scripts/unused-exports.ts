// Lists exported declarations under the given lib folders that nothing outside their own file uses,
// and those used only by tests or benchmarks. Usage: tsx scripts/unused-exports.ts lib/embed lib/db ...
import path from "node:path";
import ts from "typescript";

const root = process.cwd();
const folders = process.argv.slice(2).map((f) => path.resolve(root, f) + path.sep);
const configFile = ts.readConfigFile(path.join(root, "tsconfig.json"), ts.sys.readFile);
const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, root);
const program = ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true, incremental: false } });
const checker = program.getTypeChecker();
const sources = program.getSourceFiles().filter((s) => !s.isDeclarationFile && !s.fileName.includes("node_modules"));

function resolve(symbol: ts.Symbol | undefined): ts.Symbol | undefined {
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) return checker.getAliasedSymbol(symbol);
  return symbol;
}

/** Per symbol, how many identifiers in each file resolve to it (its declaration's name included). */
const usedIn = new Map<ts.Symbol, Map<string, number>>();
for (const source of sources) {
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) {
      // `const { name } = await import("…")`: the property of the module read by destructuring.
      const destructured =
        ts.isBindingElement(node.parent) && node.parent.name === node && !node.parent.propertyName && ts.isObjectBindingPattern(node.parent.parent)
          ? checker.getTypeAtLocation(node.parent.parent).getProperty(node.text)
          : undefined;
      const symbol = resolve(destructured ?? checker.getSymbolAtLocation(node));
      if (symbol) {
        let files = usedIn.get(symbol);
        if (!files) usedIn.set(symbol, (files = new Map()));
        files.set(source.fileName, (files.get(source.fileName) ?? 0) + 1);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const rel = (f: string) => path.relative(root, f);
const isTestLike = (f: string) => /^(tests|bench|e2e)\//.test(rel(f));
for (const source of sources) {
  if (!folders.some((folder) => source.fileName.startsWith(folder))) continue;
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (!moduleSymbol) continue;
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = resolve(exported)!;
    const declaration = symbol.declarations?.[0];
    if (!declaration || declaration.getSourceFile() !== source) continue; // re-exports are judged where declared
    const uses = usedIn.get(symbol) ?? new Map<string, number>();
    const others = [...uses.keys()].filter((f) => f !== source.fileName);
    // Reads in its own file besides the declaration's name: production code reaches it through the file.
    const ownReads = (uses.get(source.fileName) ?? 0) - (symbol.declarations?.length ?? 1);
    const line = source.getLineAndCharacterOfPosition(declaration.getStart()).line + 1;
    const where = `${rel(source.fileName)}:${line} ${exported.name}`;
    if (others.length === 0 && ownReads <= 0) console.log(`dead       ${where}`);
    else if (others.length === 0) console.log(`file-only  ${where}`);
    else if (others.every(isTestLike)) console.log(`${ownReads > 0 ? "tests+file" : "tests-only"} ${where}  <- ${others.map(rel).join(", ")}`);
  }
}
