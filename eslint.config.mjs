import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";
import local from "./eslint/one-object-argument.mjs";
import positional from "./eslint/positional-exceptions.mjs";

const config = [
  ...nextVitals,
  ...nextTs,
  {
    ignores: [".next/**", "dist/**", "node_modules/**", "data/**", ".scratch/**", "test-results/**", "playwright-report/**", "next-env.d.ts"],
  },
  {
    // lib/ is the framework-free domain: no next/* imports.
    files: ["lib/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ group: ["next", "next/*"], message: "lib/ must not import next/*" }] }],
    },
  },
  {
    // The dashboard's links prefetch on a person's intent, not on sight (components/link.tsx).
    files: ["app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}"],
    ignores: ["components/link.tsx"],
    rules: {
      "no-restricted-imports": ["error", { paths: [{ name: "next/link", message: "import Link from \"@/components/link\": it prefetches on intent, not on sight" }] }],
    },
  },
  {
    // Exported lib/ functions take one object argument; the exceptions (by file, with a reason) only shrink.
    files: ["lib/**/*.ts"],
    ignores: ["lib/client/**"],
    plugins: { local },
    rules: { "local/one-object-argument": ["error", { allow: positional }] },
  },
  {
    // tests/ has no React; `useTempDataDir` is a fixture, not a hook.
    files: ["tests/**/*.ts"],
    rules: { "react-hooks/rules-of-hooks": "off" },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
];

export default config;
