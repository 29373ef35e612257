/**
 * Local ESLint rule: an exported lib/ function takes at most one parameter
 * (an object when it needs several), so call sites name what they pass.
 *
 * Options: [{ allow: { "lib/x.ts": { names: ["fn"], reason: "why" } } }].
 * A file's listed names keep their positional parameters; the list only shrinks
 * (a listed name that is no longer a positional export is reported, so it must be dropped).
 */
import path from "node:path";

function paramCount(fn) {
  return fn.params.filter((p) => !(p.type === "Identifier" && p.name === "this")).length;
}

function exportedFunctions(decl) {
  if (!decl) return [];
  if (decl.type === "FunctionDeclaration" || decl.type === "TSDeclareFunction") {
    return decl.id ? [{ name: decl.id.name, fn: decl }] : [];
  }
  if (decl.type === "VariableDeclaration") {
    return decl.declarations
      .filter((d) => d.id.type === "Identifier" && d.init && (d.init.type === "ArrowFunctionExpression" || d.init.type === "FunctionExpression"))
      .map((d) => ({ name: d.id.name, fn: d.init }));
  }
  return [];
}

const rule = {
  meta: {
    type: "suggestion",
    docs: { description: "exported lib/ functions take one object argument" },
    schema: [{ type: "object", properties: { allow: { type: "object" } }, additionalProperties: false }],
    messages: {
      stale: "'{{name}}' is listed as positional in eslint/positional-exceptions.mjs but is not a positional export here; drop it from the list",
      positional: "exported '{{name}}' takes {{count}} positional parameters; take one object ({ a, b }) instead (or list it in eslint/positional-exceptions.mjs with a reason)",
    },
  },
  create(context) {
    const allow = context.options[0]?.allow ?? {};
    const file = path.relative(context.cwd, context.filename).split(path.sep).join("/");
    const allowed = new Set(allow[file]?.names ?? []);
    const seen = new Set();
    return {
      ExportNamedDeclaration(node) {
        for (const { name, fn } of exportedFunctions(node.declaration)) {
          const count = paramCount(fn);
          if (count <= 1) continue;
          seen.add(name);
          if (!allowed.has(name)) context.report({ node: fn, messageId: "positional", data: { name, count } });
        }
      },
      "Program:exit"(node) {
        for (const name of allowed) if (!seen.has(name)) context.report({ node, messageId: "stale", data: { name } });
      },
    };
  },
};

const plugin = { rules: { "one-object-argument": rule } };

export default plugin;
