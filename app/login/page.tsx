import { LoginForm } from "@/components/login-form";
import { sameOriginPath } from "@/lib/auth/redirects";
import { signInErrorMessage } from "@/lib/auth/sign-in-errors";
import { getConfig } from "@/lib/config";

export const dynamic = "force-dynamic";

export default async function LoginPage({ searchParams }: { searchParams: Promise<{ callbackUrl?: string | string[]; error?: string | string[] }> }) {
  const { callbackUrl, error } = await searchParams;
  // Parsed as a browser will parse it, against our own URL: anything that would leave this origin becomes "/".
  const safeCallback = sameOriginPath({ callbackUrl: typeof callbackUrl === "string" ? callbackUrl : null, baseUrl: getConfig().publicUrl });
  return (
    <main className="flex min-h-screen items-center justify-center p-6">
      <div className="card w-full max-w-sm">
        <h1 className="mb-1 text-xl font-semibold">dualmind</h1>
        <p className="mb-4 text-sm text-slate-500">Sign in to the memory and governance console.</p>
        <LoginForm callbackUrl={safeCallback} initialError={signInErrorMessage(typeof error === "string" ? error : null)} />
      </div>
    </main>
  );
}
