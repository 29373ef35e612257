import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import type { APIRequestContext, Page } from "@playwright/test";
import { identitySnapshot } from "../tests/reliability/identity-snapshot";
import { E2E } from "./fixtures";

/** One server action of the build, as Next's manifest names it. */
export type ServerAction = { id: string; name: string; file: string };

/** Every server action in the production build: a new one appears here by itself, so the security table can insist on covering it. */
export function listServerActions(): ServerAction[] {
  const file = path.join(process.cwd(), ".next", "server", "server-reference-manifest.json");
  const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as { node: Record<string, { filename: string; exportedName: string }> };
  return Object.entries(manifest.node).map(([id, a]) => ({ id, name: a.exportedName, file: a.filename }));
}

/** A real server action request, as the browser sent it. */
export type CapturedAction = { url: string; id: string; contentType: string; body: Buffer };

/** Run `submit` (a click in the UI) and capture the server action request the browser sends for it. */
export async function captureServerAction(page: Page, submit: () => Promise<void>): Promise<CapturedAction> {
  const request = page.waitForRequest((r) => r.method() === "POST" && !!r.headers()["next-action"]);
  await submit();
  const r = await request;
  const body = r.postDataBuffer();
  if (!body) throw new Error("the server action request had no body");
  return { url: r.url(), id: r.headers()["next-action"], contentType: r.headers()["content-type"], body };
}

/** The arguments of an action: a form (the useActionState shape: previous state, then the form) or plain JSON values. */
export type ActionArgs = { form: Record<string, string | string[]> } | { values: unknown[] };

/**
 * Encode arguments the way React's encodeReply does: a form's fields go in
 * as `_1_<name>` parts and the argument list `[null, "$K1"]` as part `0`;
 * plain values are one JSON array. The security spec checks this against a
 * captured browser request, so a React change shows up there first.
 */
export function encodeActionArgs(args: ActionArgs): { contentType: string; body: Buffer } {
  if ("values" in args) return { contentType: "text/plain;charset=UTF-8", body: Buffer.from(JSON.stringify(args.values)) };
  const boundary = "----dualmind-e2e-boundary";
  const part = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const fields = Object.entries(args.form).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => part(`_1_${k}`, x)));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.from(fields.join("") + part("0", '[null,"$K1"]') + `--${boundary}--\r\n`) };
}

/** Post a server action with whatever session `request` carries, from `origin` (the app's own unless a test forges another). */
export async function postServerAction(
  request: APIRequestContext,
  { url, id, contentType, body, origin }: { url: string; id: string; contentType: string; body: Buffer; origin: string },
): Promise<{ status: number; text: string }> {
  const res = await request.post(url, { headers: { "next-action": id, "content-type": contentType, accept: "text/x-component", origin }, data: body, maxRedirects: 0 });
  return { status: res.status(), text: await res.text() };
}

/** What an action could have changed (see identitySnapshot), read from the server's governance.db without disturbing its writes. */
export function governanceSnapshot(): string {
  const db = new Database(path.join(E2E.dataDir, "governance.db"), { readonly: true, fileMustExist: true });
  try {
    return identitySnapshot(db);
  } finally {
    db.close();
  }
}
