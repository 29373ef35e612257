/**
 * dualmind CLI: `npm run cli -- <command>` or `npx dualmind <command>`.
 * Human output on stdout (or JSON with --json); logs and progress on stderr.
 */
import { closeAllDatabases } from "../lib/db/connection";
import { runCli, type Command } from "./cli-kit";
import { authCommands } from "./commands/auth-commands";
import { indexCommands } from "./commands/index-commands";
import { storeCommands } from "./commands/store-commands";
import { ledgerCommands } from "./commands/ledger-commands";
import { graphCommands } from "./commands/graph-commands";
import { healthCommands } from "./commands/health-commands";
import { recallCommands } from "./commands/recall-commands";
import { agentsCommands } from "./commands/agents-commands";
import { dbCommands } from "./commands/db-commands";
import { memoryCommands } from "./commands/memory-commands";
import { activityCommands } from "./commands/activity-commands";

const commands: Command[] = [...authCommands, ...storeCommands, ...indexCommands, ...ledgerCommands, ...graphCommands, ...recallCommands, ...agentsCommands, ...healthCommands, ...dbCommands, ...memoryCommands, ...activityCommands];

runCli(commands, process.argv.slice(2))
  .then((code) => {
    closeAllDatabases();
    process.exit(code);
  })
  .catch((e) => {
    process.stderr.write(`error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    closeAllDatabases();
    process.exit(1);
  });
