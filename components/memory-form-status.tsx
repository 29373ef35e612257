"use client";

import { useRouter } from "next/navigation";
import { useEffect } from "react";
import type { ActionResult } from "@/lib/http/action-result";

/** Once an action answers with where its result now lives, go there. */
export function useFollow(state: ActionResult<{ href: string }> | null): void {
  const router = useRouter();
  useEffect(() => {
    if (state?.ok && state.data) router.push(state.data.href);
  }, [state, router]);
}

/** What an action answered: a status line, or an alert with the fields it names. */
export function MemoryFormStatus<T>({ state }: { state: ActionResult<T> | null }) {
  if (!state) return null;
  if (state.ok) return <p role="status" className="text-sm text-emerald-700">{state.message}</p>;
  return (
    <div role="alert" className="text-sm text-red-600">
      <p>{state.fields ? "Some fields need a change: see the messages beside them." : state.error}</p>
      {/* A message about no one field (the form itself, or the store it names). */}
      {state.fields?.form && <p>{state.fields.form}</p>}
    </div>
  );
}

/** The message for one field, shown under it. */
export function FieldError({ id, message }: { id: string; message: string | undefined }) {
  return message ? (
    <p id={id} className="mt-1 text-xs text-red-600">
      {message}
    </p>
  ) : null;
}
