/**
 * dualmind CLI: `npm run cli -- <command>` or `npx dualmind <command>`.
 * Human output on stdout (or JSON with --json); logs and progress on stderr.
 */
import { closeAllDatabases } from "../lib/db/connection";
import { runCli } from "./cli-kit";
import { commandsFor } from "./commands";

const argv = process.argv.slice(2);

commandsFor(argv)
  .then((commands) => runCli(commands, argv))
  .then((code) => {
    closeAllDatabases();
    process.exit(code);
  })
  .catch((e) => {
    process.stderr.write(`error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    closeAllDatabases();
    process.exit(1);
  });
