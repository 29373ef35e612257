import { createStore, listStores } from "../../lib/stores/stores";
import { verifyAuditChain } from "../../lib/governance/audit";
import { formatBytes } from "../../lib/format";
import { flagString, UsageError, type Command } from "../cli-kit";

const ACTOR = `cli:${process.env.USER ?? "local"}`;

export const storeCommands: Command[] = [
  {
    name: "stores list",
    usage: "stores list",
    summary: "list stores with row counts and sizes",
    run: ({ out }) => {
      const stores = listStores();
      out(
        stores
          .map((s) => `${s.name}\t${formatBytes(s.files.indexBytes)}\t${Object.entries(s.counts).map(([t, n]) => `${t}=${n}`).join(" ")}\tvectors:${s.vectors.available ? s.vectors.version : "unavailable"}`)
          .join("\n"),
        { stores },
      );
    },
  },
  {
    name: "stores create",
    usage: "stores create <name> [--description D]",
    summary: "create a store",
    run: ({ args, flags, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      const store = createStore({ input: { name: args[0], description: flagString(flags, "description") }, actor: ACTOR });
      out(`created store ${store.name}`, store);
    },
  },
  {
    name: "audit verify",
    usage: "audit verify",
    summary: "verify the audit log's hash chain (exit 1 if broken)",
    run: ({ out }) => {
      const v = verifyAuditChain();
      out(v.ok ? `audit chain ok (${v.entries} entries)` : `audit chain BROKEN at entry ${v.brokenAtId}: ${v.reason}`, v);
      return v.ok ? 0 : 1;
    },
  },
];
