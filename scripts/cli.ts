/**
 * dualmind CLI: `npm run cli -- <command>` or `npx dualmind <command>`.
 * Human output on stdout (or JSON with --json); logs and progress on stderr.
 */
import { closeAllDatabases } from "../lib/db/connection";
import { waitForFirstProbe } from "../lib/embed/status";
import { runCli } from "./cli-kit";
import { commandsFor } from "./commands";

const argv = process.argv.slice(2);
// One command, then exit: a status waits for the provider's first answer (up to its own timeout) and checks the model.
// (`mcp`, the one long-lived command, sets the server's patience back.)
waitForFirstProbe("provider-timeout");

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
