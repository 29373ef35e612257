/**
 * scripts/cli.ts loads only the module of the command it runs (scripts/commands/index.ts):
 * every command is found that way, and `--help` or an unknown command still gets them all.
 */
import { describe, expect, it } from "vitest";
import { findCommand } from "@/scripts/cli-kit";
import { allCommands, commandsFor, COMMAND_MODULES } from "@/scripts/commands";

describe("the CLI's command routing", () => {
  it("every command's first word leads to the module that has it, and the command is found there", async () => {
    const modules = await Promise.all(COMMAND_MODULES.map((load) => load()));
    const names = modules.flat().map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const command of modules.flat()) {
      const words = command.name.split(" ");
      const routed = await commandsFor([...words, "--json"]);
      expect(routed, command.name).toBe(modules.find((m) => m.includes(command)));
      expect(findCommand(routed, words), command.name).toBe(command);
    }
  });

  it("--help, an unknown command and an unknown subcommand get every command, in --help order", async () => {
    const every = (await allCommands()).map((c) => c.name);
    expect(every.length).toBeGreaterThan(50);
    for (const argv of [["--help"], ["users", "list", "--help"], ["nope"], ["users", "nope"], []]) {
      expect((await commandsFor(argv)).map((c) => c.name), argv.join(" ")).toEqual(every);
    }
  });
});
