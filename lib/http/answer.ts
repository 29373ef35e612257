/**
 * A handler's answer when the route's default is not enough: another status
 * (201 for a new record, 200 when a retry found it) or a body that is not
 * JSON (Prometheus text). The route wrapper unwraps it, so the body still
 * goes through the response contract and keeps the request id; a handler
 * never builds its own Response.
 */
const ANSWER = Symbol("dualmind.answer");

export type Answer = { readonly [ANSWER]: true; readonly body: unknown; readonly status: number; readonly contentType?: string };

export function answerWithStatus({ body, status }: { body: unknown; status: number }): Answer {
  return { [ANSWER]: true, body, status };
}

/** A text body with its content type, e.g. the Prometheus exposition format. */
export function answerText({ body, contentType, status = 200 }: { body: string; contentType: string; status?: number }): Answer {
  return { [ANSWER]: true, body, status, contentType };
}

export function isAnswer(value: unknown): value is Answer {
  return typeof value === "object" && value !== null && ANSWER in value;
}
