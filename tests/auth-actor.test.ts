import { describe, expect, it } from "vitest";
import { actorOf } from "@/lib/auth/actor";

describe("actorOf: who an audit row names", () => {
  it("an agent by its token's agent id, a person by username, the CLI by OS user", () => {
    expect(actorOf({ tokenId: 7, agentId: "claude", label: "t", scopes: ["read"], stores: null })).toBe("agent:claude");
    expect(actorOf({ username: "ana" })).toBe("user:ana");
    expect(actorOf("cli")).toBe(`cli:${process.env.USER ?? "local"}`);
  });

  it("no principal is a 401, never agent:undefined", () => {
    expect(() => actorOf(null)).toThrow(expect.objectContaining({ code: "unauthorized", status: 401 }));
  });
});
