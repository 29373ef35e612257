import "server-only";
import { ZodError, type z } from "zod";
import { AppError, infrastructureError, isAppError } from "../errors";
import { log } from "../log";

/** What was typed into a form, echoed back on an error so the form keeps it (never a password or a secret). */
export type FormValues = Record<string, string | string[]>;

export type ActionFailure = { ok: false; error: string; fields?: Record<string, string>; values?: FormValues };
export type ActionResult<T = undefined> = { ok: true; message: string; data?: T } | ActionFailure;

/** Zod's default messages start with these; a message a schema wrote itself ("letters, digits …") is already for people. */
const ZOD_DEFAULT = /^(Too big|Too small|Invalid input|Invalid option|Invalid string|Invalid)\b/;

const sizeOf = (origin: unknown, n: unknown) => (origin === "string" ? `${String(n)} characters` : origin === "array" || origin === "set" ? `${String(n)} items` : String(n));

/** One zod issue as a person reads it: "must be at most 1" instead of "Too big: expected number to be <=1". */
export function humanIssue(issue: z.core.$ZodIssue): string {
  if (!ZOD_DEFAULT.test(issue.message)) return issue.message;
  switch (issue.code) {
    case "too_big":
      return `must be at most ${sizeOf(issue.origin, issue.maximum)}`;
    case "too_small":
      if (issue.origin === "string" && Number(issue.minimum) === 1) return "is required";
      if (issue.origin === "array" && Number(issue.minimum) === 1) return "choose at least one";
      return `must be at least ${sizeOf(issue.origin, issue.minimum)}`;
    case "invalid_type":
      if (issue.expected === "number" || issue.expected === "int") return issue.expected === "int" ? "must be a whole number" : "must be a number";
      return "is required";
    case "invalid_value":
      return `must be one of ${issue.values.map(String).join(", ")}`;
    case "invalid_format":
      return "has characters that are not allowed here";
    default:
      return "is not valid";
  }
}

/** Field name → message, first message per field; a nested path is dotted ("retention.ttl_days"). */
function fieldMessages(issues: { path: PropertyKey[]; message: string }[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of issues) fields[issue.path.map(String).join(".") || "form"] ??= issue.message;
  return fields;
}

/**
 * Turn a thrown error into a form-friendly result; unknown errors are logged,
 * not leaked. `values` (what was typed) go back with any error so the form
 * keeps them; field errors come from zod issues and from typed errors whose
 * details name a path.
 */
export function actionError({ error: e, values }: { error: unknown; values?: FormValues }): ActionFailure {
  if (isAppError(e)) {
    const withPath = e.details.filter((d): d is typeof d & { path: string } => typeof d.path === "string" && d.path !== "");
    return { ok: false, error: e.message, values, ...(withPath.length ? { fields: fieldMessages(withPath.map((d) => ({ path: d.path.split("."), message: d.message }))) } : {}) };
  }
  if (e instanceof ZodError) {
    const fields = fieldMessages(e.issues.map((i) => ({ path: i.path, message: humanIssue(i) })));
    const names = Object.keys(fields);
    return { ok: false, error: names.length === 1 ? `Check ${names[0].replaceAll("_", " ")}: it ${fields[names[0]]}.` : `Check the ${names.length} fields marked below.`, fields, values };
  }
  const infra = infrastructureError(e);
  if (infra) {
    log("error", "server action failed", { error: String(e) });
    return { ok: false, error: infra.message, values };
  }
  log("error", "server action failed", { error: e instanceof Error ? e.stack : String(e) });
  return { ok: false, error: "Something went wrong on the server; it was logged.", values };
}

/** The fields of a submitted form as text, leaving out the ones named in `secret` (passwords are never echoed back). */
export function formValues({ form, secret = [] }: { form: FormData; secret?: string[] }): FormValues {
  const values: FormValues = {};
  for (const key of new Set(form.keys())) {
    if (key.startsWith("$ACTION") || secret.includes(key)) continue;
    const all = form.getAll(key).filter((v): v is string => typeof v === "string");
    values[key] = all.length > 1 ? all : (all[0] ?? "");
  }
  return values;
}

/**
 * Server actions are public endpoints: a hand-made call can pass anything
 * where the form should be, and that is the caller's mistake, not a server
 * fault to log. Call it right after the session check.
 */
export function assertForm(form: unknown): asserts form is FormData {
  if (!(form instanceof FormData)) throw new AppError("invalid_request", "this action takes the fields of its form");
}
