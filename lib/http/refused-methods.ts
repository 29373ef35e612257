import http from "node:http";
import type { Duplex } from "node:stream";
import { AppError } from "../errors";
import { contentSecurityPolicy, SECURITY_HEADERS } from "./security-headers";

/**
 * The methods this server serves. Any other that Node's parser lets through
 * is answered 405 here, before Next sees it, with the same error envelope and
 * headers as every other refusal: TRACE (the fetch standard forbids it, so
 * Next cannot build a Request and answered 500 with a stack trace) and the
 * WebDAV-style ones (PROPFIND, MKCOL, ...: Next answered 400 with no body).
 * The same on a connection upgrade (an `Upgrade` header), which Node hands
 * to its own event. (CONNECT is Node's own event, with no listener here: the
 * socket is closed.) HTTPS is terminated in front of this server, so only
 * node:http servers are covered.
 */
const SERVED_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const ALLOW = [...SERVED_METHODS].join(", ");

function refusal(method: string): { body: string; headers: Record<string, string | number> } {
  const body = JSON.stringify(new AppError("method_not_allowed", `${method} is not served here`).toBody());
  return {
    body,
    headers: {
      ...SECURITY_HEADERS,
      "content-security-policy": contentSecurityPolicy(),
      "content-type": "application/json",
      "cache-control": "no-store",
      allow: ALLOW,
      "content-length": Buffer.byteLength(body),
    },
  };
}

let installed = false;

/** Installs the refusal on every HTTP server of this process (called once at start-up). */
export function refuseForbiddenMethods(): void {
  if (installed) return;
  installed = true;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "request") {
      const [req, res] = args as [http.IncomingMessage, http.ServerResponse];
      if (req.method && !SERVED_METHODS.has(req.method)) {
        const { body, headers } = refusal(req.method);
        res.writeHead(405, headers);
        res.end(body);
        return true;
      }
    }
    if (event === "upgrade") {
      const [req, socket] = args as [http.IncomingMessage, Duplex];
      if (req.method && !SERVED_METHODS.has(req.method)) {
        const { body, headers } = refusal(req.method);
        const head = Object.entries({ ...headers, connection: "close" }).map(([k, v]) => `${k}: ${v}`);
        socket.end(`HTTP/1.1 405 Method Not Allowed\r\n${head.join("\r\n")}\r\n\r\n${body}`);
        return true;
      }
    }
    return emit.call(this, event, ...args);
  } as typeof http.Server.prototype.emit;
}
