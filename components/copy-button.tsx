"use client";

import { useState } from "react";

/**
 * Copy a secret or an id to the clipboard. The Clipboard API needs a secure
 * context (https or localhost); on plain http over a LAN it falls back to
 * selecting the text in a hidden field and the browser's copy command.
 */
export function CopyButton({ value, label = "Copy", className = "btn-secondary" }: { value: string; label?: string; className?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  async function copy() {
    try {
      if (navigator.clipboard && window.isSecureContext) await navigator.clipboard.writeText(value);
      else copyBySelection(value);
      setState("copied");
    } catch {
      setState("failed");
    }
  }
  return (
    <button type="button" className={className} onClick={copy} aria-label={`${label}: ${state === "copied" ? "copied" : "copy to clipboard"}`}>
      {state === "copied" ? "Copied" : state === "failed" ? "Select and copy by hand" : label}
    </button>
  );
}

function copyBySelection(value: string): void {
  const field = document.createElement("textarea");
  field.value = value;
  field.setAttribute("readonly", "");
  field.style.position = "fixed";
  field.style.opacity = "0";
  document.body.appendChild(field);
  field.select();
  const ok = document.execCommand("copy");
  field.remove();
  if (!ok) throw new Error("copy refused");
}
