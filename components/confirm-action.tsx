"use client";

import { useId, useRef, useState, type ReactNode } from "react";

/**
 * A button that asks before it acts: it opens a modal dialog saying what will
 * happen (with counts), and only "Confirm" goes on; "Cancel", Escape or a
 * click outside do nothing. Two ways to act:
 *
 * - `onConfirm`: a client flow (a transition calling a server action);
 * - `submit`: inside a `<form>`, Confirm is that form's submit button with
 *   this name/value (so one form with several intents keeps working and the
 *   server action still reads `form.get(name)`).
 *
 * What will happen is `children` when it is known at render time, or
 * `loadDetails` when it must be counted at the moment of asking (e.g. a
 * re-embed estimate): it runs each time the dialog opens, and Confirm waits
 * for it. A failed count is shown and Confirm stays possible.
 *
 *   <ConfirmAction label="Revoke" title="Revoke token ci-bot?" confirmLabel="Revoke" tone="danger" submit={{ name: "intent", value: "revoke" }}>
 *     Agents using it get 401 from their next request.
 *   </ConfirmAction>
 */
export type ConfirmActionProps = {
  /** The trigger button's text. */
  label: ReactNode;
  /** The dialog's heading: a question naming the action and its target. */
  title: string;
  /** What will happen, when known at render time. */
  children?: ReactNode;
  /** What will happen, counted when the dialog opens. */
  loadDetails?: () => Promise<ReactNode>;
  confirmLabel?: string;
  cancelLabel?: string;
  /** danger: the confirm button is red (revoke, delete, switch). */
  tone?: "default" | "danger";
  /** Classes of the trigger button (default: btn-danger for tone danger, else btn-secondary). */
  triggerClassName?: string;
  /** The trigger's accessible name when `label` alone is ambiguous (one "Revoke" per table row). */
  triggerAriaLabel?: string;
  disabled?: boolean;
  onConfirm?: () => void;
  submit?: { name: string; value: string };
  testId?: string;
};

export function ConfirmAction({
  label,
  title,
  children,
  loadDetails,
  confirmLabel = "Confirm",
  cancelLabel = "Cancel",
  tone = "default",
  triggerClassName,
  triggerAriaLabel,
  disabled = false,
  onConfirm,
  submit,
  testId,
}: ConfirmActionProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [details, setDetails] = useState<{ state: "idle" | "loading" | "ready" | "failed"; content: ReactNode }>({ state: "idle", content: null });

  const open = () => {
    dialog.current?.showModal();
    if (!loadDetails) return;
    setDetails({ state: "loading", content: null });
    loadDetails().then(
      (content) => setDetails({ state: "ready", content }),
      (e: unknown) => setDetails({ state: "failed", content: `Could not count what this would do: ${e instanceof Error ? e.message : String(e)}` }),
    );
  };
  const close = () => dialog.current?.close();
  // m-auto on the dialog: Tailwind's preflight zeroes every margin, which would pin the modal to the top-left corner.
  const confirmClass = tone === "danger" ? "btn bg-red-700 hover:bg-red-800" : "btn";

  return (
    <>
      <button type="button" className={triggerClassName ?? (tone === "danger" ? "btn-danger" : "btn-secondary")} disabled={disabled} aria-label={triggerAriaLabel} aria-haspopup="dialog" onClick={open} data-testid={testId}>
        {label}
      </button>
      <dialog
        ref={dialog}
        aria-labelledby={titleId}
        className="m-auto w-full max-w-md rounded-lg border border-slate-300 p-0 text-sm shadow-xl backdrop:bg-slate-900/40"
        onClick={(e) => {
          // A click on the backdrop (the dialog element itself, outside its content) cancels.
          if (e.target === e.currentTarget) close();
        }}
      >
        <div className="space-y-3 p-4">
          <h2 id={titleId} className="text-base font-semibold">
            {title}
          </h2>
          {children && <div className="text-slate-700">{children}</div>}
          {loadDetails && (
            <div className="text-slate-700" aria-live="polite" data-testid="confirm-details">
              {details.state === "loading" ? "Counting…" : details.state === "failed" ? <span className="text-red-600">{details.content}</span> : details.content}
            </div>
          )}
          <div className="flex justify-end gap-2">
            <button type="button" className="btn-secondary" onClick={close}>
              {cancelLabel}
            </button>
            {submit ? (
              <button type="submit" name={submit.name} value={submit.value} className={confirmClass} disabled={details.state === "loading"} onClick={close}>
                {confirmLabel}
              </button>
            ) : (
              <button
                type="button"
                className={confirmClass}
                disabled={details.state === "loading"}
                onClick={() => {
                  close();
                  onConfirm?.();
                }}
              >
                {confirmLabel}
              </button>
            )}
          </div>
        </div>
      </dialog>
    </>
  );
}
