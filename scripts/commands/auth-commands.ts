import { createInterface } from "node:readline/promises";
import { z } from "zod";
import { SCOPES } from "../../lib/auth/tokens";
import { ROLES } from "../../lib/auth/users";
import { governance } from "../../lib/backend/governance";
import { createUser, setUserPassword } from "../../lib/backend/users";
import { generatePassword } from "../../lib/auth/passwords";
import { formatTime } from "../../lib/format";
import { flagString, UsageError, type Command, type CommandContext } from "../cli-kit";

const ACTOR = `cli:${process.env.USER ?? "local"}`;

/** --password, else a prompt on a terminal, else a generated one that is printed once. */
async function passwordFrom(flags: Record<string, string | boolean>): Promise<{ password: string; generated: boolean }> {
  const given = flagString(flags, "password");
  if (given) return { password: given, generated: false };
  if (process.stdin.isTTY) {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    const password = await rl.question("password: ");
    rl.close();
    return { password, generated: false };
  }
  return { password: generatePassword(), generated: true };
}

async function setDisabledFromCli({ username, disabled, out }: { username: string | undefined; disabled: boolean; out: CommandContext["out"] }): Promise<void> {
  if (!username) throw new UsageError("username is required");
  const user = await governance().setUserDisabled({ username, disabled, actor: ACTOR });
  out(`${username} is ${user.disabledAt ? "disabled" : "enabled"}`, { username, disabled: !!user.disabledAt });
}

export const authCommands: Command[] = [
  {
    name: "users list",
    usage: "users list",
    summary: "list dashboard users",
    run: async ({ out }) => {
      const users = await governance().listUsers({});
      out(users.map((u) => `${u.username}\t${u.role}\t${formatTime(u.createdAt)}\t${u.disabledAt ? "disabled" : "active"}`).join("\n") || "(no users)", { users });
    },
  },
  {
    name: "users add",
    usage: "users add <username> [--role viewer|editor|admin] [--password P]",
    summary: "add a user (password prompted, or generated and printed once)",
    run: async ({ args, flags, out }) => {
      const [username] = args;
      if (!username) throw new UsageError("username is required");
      const role = z.enum(ROLES).parse(flagString(flags, "role") ?? "viewer");
      const { password, generated } = await passwordFrom(flags);
      const user = await createUser({ input: { username, password, role }, actor: ACTOR });
      out(`created ${user.role} ${user.username}${generated ? ` with password: ${password}` : ""}`, { user, password: generated ? password : undefined });
    },
  },
  {
    name: "users reset-password",
    usage: "users reset-password <username> [--password P]",
    summary: "set a new password (prompted, or generated and printed once); ends the user's sessions",
    run: async ({ args, flags, out }) => {
      const [username] = args;
      if (!username) throw new UsageError("username is required");
      const { password, generated } = await passwordFrom(flags);
      await setUserPassword({ username, password, actor: ACTOR });
      out(`password of ${username} changed${generated ? `: ${password}` : ""}`, { username, password: generated ? password : undefined });
    },
  },
  {
    name: "users set-role",
    usage: "users set-role <username> viewer|editor|admin",
    summary: "change a user's role; ends the user's sessions",
    run: async ({ args, out }) => {
      const [username, role] = args;
      if (!username || !role) throw new UsageError("username and role are required");
      await governance().setUserRole({ username, role: z.enum(ROLES).parse(role), actor: ACTOR });
      out(`${username} is now ${role}`, { username, role });
    },
  },
  {
    name: "users disable",
    usage: "users disable <username>",
    summary: "refuse a user's sign-in and end their sessions",
    run: ({ args, out }) => setDisabledFromCli({ username: args[0], disabled: true, out }),
  },
  {
    name: "users enable",
    usage: "users enable <username>",
    summary: "let a disabled user sign in again",
    run: ({ args, out }) => setDisabledFromCli({ username: args[0], disabled: false, out }),
  },
  {
    name: "tokens create",
    usage: "tokens create --label L --agent ID [--scopes read,write,admin] [--stores a,b]",
    summary: "create an agent API token (printed once)",
    run: async ({ flags, out }) => {
      const scopes = (flagString(flags, "scopes") ?? "read").split(",").map((s) => z.enum(SCOPES).parse(s.trim()));
      const stores = flagString(flags, "stores")?.split(",").map((s) => s.trim());
      const { token, info } = await governance().createApiToken({
        input: { label: flagString(flags, "label") ?? "", agent_id: flagString(flags, "agent") ?? "", scopes, stores: stores ?? null },
        actor: ACTOR,
      });
      out(`${token}\n(token ${info.id} for agent ${info.agent_id}; shown once)`, { token, ...info });
    },
  },
  {
    name: "tokens list",
    usage: "tokens list",
    summary: "list API tokens (never their secrets)",
    run: async ({ out }) => {
      const tokens = await governance().listApiTokens({});
      out(
        tokens
          .map((t) => `${t.id}\t${t.display_prefix}…\t${t.label}\t${t.agent_id}\t${t.scopes.join(",")}\t${t.stores?.join(",") ?? "all"}\t${t.revoked_at ? "revoked" : "active"}`)
          .join("\n") || "(no tokens)",
        { tokens },
      );
    },
  },
  {
    name: "tokens revoke",
    usage: "tokens revoke <id> [--reason R]",
    summary: "revoke a token",
    run: async ({ args, flags, out }) => {
      const id = z.coerce.number().int().positive().parse(args[0]);
      const info = await governance().revokeApiToken({ id, actor: ACTOR, reason: flagString(flags, "reason") });
      out(`token ${id} revoked`, info);
    },
  },
];
