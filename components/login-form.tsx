"use client";

import { signIn } from "next-auth/react";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { signInErrorMessage } from "@/lib/auth/sign-in-errors";

/** `callbackUrl` is a same-origin path already (app/login/page.tsx checks it). */
export function LoginForm({ callbackUrl, initialError = null }: { callbackUrl: string; initialError?: string | null }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(initialError);
  const [pending, setPending] = useState(false);

  async function onSubmit(e: React.FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setPending(true);
    setError(null);
    const form = new FormData(e.currentTarget);
    const res = await signIn("credentials", {
      username: String(form.get("username") ?? ""),
      password: String(form.get("password") ?? ""),
      redirect: false,
    });
    setPending(false);
    if (!res || res.error || !res.ok) {
      // A throttled attempt says when to come back ("Too many attempts — try again in 2 min").
      setError(signInErrorMessage(res?.error ?? "CredentialsSignin"));
      return;
    }
    router.replace(callbackUrl);
    router.refresh();
  }

  return (
    <form onSubmit={onSubmit} className="space-y-3">
      <label className="block">
        <span className="label">Username</span>
        <input className="input mt-1" name="username" autoComplete="username" required />
      </label>
      <label className="block">
        <span className="label">Password</span>
        <input className="input mt-1" name="password" type="password" autoComplete="current-password" required />
      </label>
      {error && (
        <p role="alert" className="text-sm text-red-600">
          {error}
        </p>
      )}
      <button className="btn w-full justify-center" type="submit" disabled={pending}>
        {pending ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
