/**
 * Where each CLI command lives, by its first word, so a command loads only its
 * own module (each pulls in its part of lib/); `--help` and an unknown command
 * load every module, in the order `--help` lists them.
 * tests/cli-commands.test.ts checks that every command's first word leads to the module that has it.
 */
import { findCommand, parseArgv, type Command } from "../cli-kit";

type Load = () => Promise<Command[]>;

const auth: Load = () => import("./auth-commands").then((m) => m.authCommands);
const store: Load = () => import("./store-commands").then((m) => m.storeCommands);
const index: Load = () => import("./index-commands").then((m) => m.indexCommands);
const ledger: Load = () => import("./ledger-commands").then((m) => m.ledgerCommands);
const graph: Load = () => import("./graph-commands").then((m) => m.graphCommands);
const recall: Load = () => import("./recall-commands").then((m) => m.recallCommands);
const agents: Load = () => import("./agents-commands").then((m) => m.agentsCommands);
const health: Load = () => import("./health-commands").then((m) => m.healthCommands);
const db: Load = () => import("./db-commands").then((m) => m.dbCommands);
const memory: Load = () => import("./memory-commands").then((m) => m.memoryCommands);
const activity: Load = () => import("./activity-commands").then((m) => m.activityCommands);
const item: Load = () => import("./item-commands").then((m) => m.itemCommands);
const review: Load = () => import("./review-commands").then((m) => m.reviewCommands);
const forget: Load = () => import("./forget-commands").then((m) => m.forgetCommands);

/** Every module, in `--help` order. */
export const COMMAND_MODULES: readonly Load[] = [auth, store, index, ledger, graph, recall, agents, health, db, memory, activity, item, forget, review];

/** The module of the commands that start with a word. */
export const MODULE_BY_FIRST_WORD: Readonly<Record<string, Load>> = {
  users: auth,
  tokens: auth,
  stores: store,
  embeddings: store,
  audit: store,
  search: index,
  reindex: index,
  evaluate: index,
  verify: index,
  ledger,
  dialectic: ledger,
  graph,
  recall,
  reflection: recall,
  mcp: agents,
  backup: agents,
  restore: agents,
  export: agents,
  import: agents,
  reembed: agents,
  health: agents,
  metrics: health,
  migrate: db,
  "migrate-data": db,
  memories: memory,
  activity,
  item,
  forget,
  policy: review,
  proposals: review,
};

export async function allCommands(): Promise<Command[]> {
  return (await Promise.all(COMMAND_MODULES.map((load) => load()))).flat();
}

/**
 * The commands to hand runCli(): the module of the first word when one of its commands
 * matches (and no --help), else every command (for the full usage).
 */
export async function commandsFor(argv: string[]): Promise<Command[]> {
  const { positional, flags } = parseArgv(argv);
  const load = Object.hasOwn(MODULE_BY_FIRST_WORD, positional[0] ?? "") ? MODULE_BY_FIRST_WORD[positional[0]] : undefined;
  if (load && flags.help !== true) {
    const commands = await load();
    if (findCommand(commands, positional)) return commands;
  }
  return allCommands();
}
