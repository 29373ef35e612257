import "server-only";
import { ZodError } from "zod";
import { AppError, infrastructureError, isAppError } from "../errors";
import { log } from "../log";

export type ActionResult<T = undefined> = { ok: true; message: string; data?: T } | { ok: false; error: string; fields?: Record<string, string> };

/** Turn a thrown error into a form-friendly result; unknown errors are logged, not leaked. */
export function actionError(e: unknown): { ok: false; error: string; fields?: Record<string, string> } {
  if (isAppError(e)) return { ok: false, error: e.message };
  if (e instanceof ZodError) {
    const fields: Record<string, string> = {};
    for (const issue of e.issues) fields[issue.path.join(".") || "form"] ??= issue.message;
    return { ok: false, error: "Please fix the highlighted fields.", fields };
  }
  const infra = infrastructureError(e);
  if (infra) {
    log("error", "server action failed", { error: String(e) });
    return { ok: false, error: infra.message };
  }
  log("error", "server action failed", { error: e instanceof Error ? e.stack : String(e) });
  return { ok: false, error: "Something went wrong on the server; it was logged." };
}

/**
 * Server actions are public endpoints: a hand-made call can pass anything
 * where the form should be, and that is the caller's mistake, not a server
 * fault to log. Call it right after the session check.
 */
export function assertForm(form: unknown): asserts form is FormData {
  if (!(form instanceof FormData)) throw new AppError("invalid_request", "this action takes the fields of its form");
}
