import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";

const config = [
  ...nextVitals,
  ...nextTs,
  {
    ignores: [".next/**", "node_modules/**", "data/**", ".scratch/**", "test-results/**", "playwright-report/**", "next-env.d.ts"],
  },
  {
    // lib/ is the framework-free domain: no next/* imports.
    files: ["lib/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ group: ["next", "next/*"], message: "lib/ must not import next/*" }] }],
    },
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
