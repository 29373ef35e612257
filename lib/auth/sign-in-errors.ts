/**
 * What a refused sign-in tells the person, shared by the server (which puts
 * the code in next-auth's `?error=`) and the login form (which reads it back).
 * No imports: the login form is a client component.
 */

const TOO_MANY_ATTEMPTS = /^TooManyAttempts:(\d{1,7})$/;

/** The error code authorize() throws for a throttled attempt: next-auth passes it on as `?error=`. */
export function tooManyAttemptsError(retryAfterSeconds: number): string {
  return `TooManyAttempts:${Math.max(1, Math.ceil(retryAfterSeconds))}`;
}

/** Seconds to wait, when `error` is a throttled attempt's code; null otherwise. */
export function retryAfterSecondsOf(error: string | null | undefined): number | null {
  const m = error ? TOO_MANY_ATTEMPTS.exec(error) : null;
  return m ? Number(m[1]) : null;
}

/** "try again in 30 s" / "in 2 min": rounded up, so the person never comes back too early. */
export function formatRetryAfter(seconds: number): string {
  return seconds < 60 ? `${seconds} s` : `${Math.ceil(seconds / 60)} min`;
}

/** The line under the form for a next-auth error code (null: no error). */
export function signInErrorMessage(error: string | null | undefined): string | null {
  if (!error) return null;
  const wait = retryAfterSecondsOf(error);
  if (wait !== null) return `Too many attempts — try again in ${formatRetryAfter(wait)}.`;
  if (error === "CredentialsSignin") return "Wrong username or password.";
  return "Sign-in failed. Please try again.";
}
