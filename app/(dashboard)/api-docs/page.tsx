import { headers } from "next/headers";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/catalog";
import { requireUser } from "@/app/_server/session";
import { buildApiReference } from "@/lib/api/openapi";
import { getConfig } from "@/lib/config";
import { DEFAULT_STORE } from "@/lib/db/store-names";
import { requestBaseUrl } from "@/lib/http/public-url";
import { listToolDescriptors } from "@/lib/mcp/server";
import { pushTo } from "@/lib/collections";
import { mcpClientConfigText, mcpStdioLaunch } from "@/lib/mcp/stdio-config";
import { CopyButton } from "@/components/copy-button";
import Link from "@/components/link";

export default async function ApiDocsPage() {
  const user = await requireUser();
  const config = getConfig();
  const baseUrl = requestBaseUrl({ headers: await headers(), trustProxyHops: config.trustProxyHops, configuredUrl: config.publicUrl });
  const entries = buildApiReference(Object.values(ROUTE_MODULES));
  const groups = new Map<string, typeof entries>();
  for (const e of entries) {
    const group = e.path.split("/")[3] ?? "api";
    pushTo(groups, group, e);
  }
  const tools = listToolDescriptors();
  // `next start` runs from the installation's root (scripts/start.ts), so its cwd is where the CLI lives.
  // Server paths are shown to admins only; others see placeholders to fill in.
  const stdio = mcpStdioLaunch({ installRoot: process.cwd(), dataDir: config.dataDir, store: DEFAULT_STORE, nodePath: process.execPath, usesPostgres: Boolean(config.databaseUrl), showPaths: user.role === "admin" });
  const configText = mcpClientConfigText({ baseUrl, stdio });
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">API reference</h1>
      <p className="text-sm text-slate-700">
        Every call takes <code>Authorization: Bearer dm_...</code> (scopes nest admin ⊃ write ⊃ read). Fields are snake_case both ways. Errors are always <code>{"{ error: { code, message, details } }"}</code>. The machine-readable
        document is <a className="text-blue-700 underline" href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI 3.1, generated from the same zod schemas the handlers validate with and the tests check every answer against).
      </p>

      <section className="card space-y-2" aria-labelledby="mcp-heading">
        <h2 id="mcp-heading" className="text-lg font-semibold">
          MCP
        </h2>
        <p className="text-sm text-slate-700">
          Streamable HTTP at <code>/api/mcp</code> with a bearer token (
          {user.role === "admin" ? (
            <Link className="text-blue-700 underline" href="/admin#tokens-heading">
              create one on the Admin page
            </Link>
          ) : (
            "an admin creates one on the Admin page"
          )}
          ; replace <code>dm_...</code> with it), or stdio: the client launches this installation&apos;s CLI by its absolute path, so the entry works from any folder. Client configuration for this server:
        </p>
        <pre tabIndex={0} className="overflow-x-auto rounded bg-slate-900 p-3 text-xs text-slate-100" data-testid="mcp-config">
          {configText}
        </pre>
        <CopyButton value={configText} label="Copy configuration" />
        <p className="text-sm text-slate-700">Try it:</p>
        <pre tabIndex={0} className="overflow-x-auto rounded bg-slate-900 p-3 text-xs text-slate-100" data-testid="curl-example">
          {`curl -s -H "Authorization: Bearer $DUALMIND_TOKEN" ${baseUrl}/api/v1/stores/${DEFAULT_STORE}/memories\n` +
            `curl -s -H "Authorization: Bearer $DUALMIND_TOKEN" -H "content-type: application/json" \\\n  -d '{"q":"backups","mode":"hybrid"}' ${baseUrl}/api/v1/stores/${DEFAULT_STORE}/search`}
        </pre>
        <table tabIndex={0} className="data" data-testid="mcp-tools">
          <thead>
            <tr>
              <th>Tool</th>
              <th>What it does</th>
            </tr>
          </thead>
          <tbody>
            {tools.map((t) => (
              <tr key={t.name}>
                <td className="font-mono text-xs">{t.name}</td>
                <td className="text-sm">{t.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      {[...groups.entries()].map(([group, list]) => (
        <section key={group} className="card space-y-3" aria-labelledby={`group-${group}`}>
          <h2 id={`group-${group}`} className="text-lg font-semibold">
            /{group}
          </h2>
          {list.map((e) => (
            <details key={`${e.method} ${e.path}`} className="border-t border-slate-100 pt-2" data-testid="api-operation">
              <summary className="cursor-pointer text-sm">
                <span className="mr-2 inline-block w-14 font-mono font-semibold">{e.method}</span>
                <span className="font-mono">{e.path}</span>
                <span className="ml-2 text-xs text-slate-500">scope: {e.scope}</span>
              </summary>
              <p className="mt-1 text-sm text-slate-700">{e.summary}</p>
              {e.fields.length > 0 && (
                <table tabIndex={0} className="data mt-2">
                  <thead>
                    <tr>
                      <th>Field</th>
                      <th>In</th>
                      <th>Type</th>
                      <th>Required</th>
                    </tr>
                  </thead>
                  <tbody>
                    {e.fields.map((f) => (
                      <tr key={`${f.where}-${f.name}`}>
                        <td className="font-mono text-xs">{f.name}</td>
                        <td className="text-xs">{f.where}</td>
                        <td className="font-mono text-xs">{f.type}</td>
                        <td className="text-xs">{f.required ? "yes" : ""}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              <p className="mt-2 text-xs text-slate-600">
                Answers <span className="font-mono">{e.statuses.join(" or ")}</span> with:
              </p>
              <pre tabIndex={0} className="mt-1 overflow-x-auto rounded bg-slate-50 p-2 text-xs" data-testid="api-response-shape">
                {e.response}
              </pre>
            </details>
          ))}
        </section>
      ))}
    </div>
  );
}
