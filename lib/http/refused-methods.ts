import http from "node:http";
import { AppError } from "../errors";
import { contentSecurityPolicy, SECURITY_HEADERS } from "./security-headers";

/**
 * TRACE is a method the fetch standard forbids: Next cannot build a Request
 * for it, so any path answered 500 and logged a stack trace. The server
 * answers it 405 itself, before Next sees the request, with the same error
 * envelope and headers as every other refusal. (TRACK and CONNECT never get
 * this far: Node's HTTP parser refuses them.)
 */
const REFUSED_METHODS = new Set(["TRACE"]);

let installed = false;

/** Installs the refusal on every HTTP server of this process (called once at start-up). */
export function refuseForbiddenMethods(): void {
  if (installed) return;
  installed = true;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "request") {
      const [req, res] = args as [http.IncomingMessage, http.ServerResponse];
      if (req.method && REFUSED_METHODS.has(req.method)) {
        const body = JSON.stringify(new AppError("method_not_allowed", `${req.method} is not served here`).toBody());
        res.writeHead(405, {
          ...SECURITY_HEADERS,
          "content-security-policy": contentSecurityPolicy(),
          "content-type": "application/json",
          "cache-control": "no-store",
          allow: "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
          "content-length": Buffer.byteLength(body),
        });
        res.end(body);
        return true;
      }
    }
    return emit.call(this, event, ...args);
  } as typeof http.Server.prototype.emit;
}
