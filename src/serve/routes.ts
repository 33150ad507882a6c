/**
 * serve's HTTP side: a router over path prefixes (/healthz is health.ts), and
 * listening (a port that cannot be had is an error, not a warning).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import { ConnectionBound, type ConnectionStats } from './connection-bound.js';

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;

export interface HttpServer {
  server: Server;
  /** Where it listens, as a client reaches it. */
  url: string;
  /** Ends open connections and stops listening. */
  close(): Promise<void>;
  /** The listener's connections (all zero without a bound). */
  connections(): ConnectionStats;
}

/** Listens on host:port and serves the routes (by exact path, or by prefix for paths ending in '/'). */
export async function startHttp(opts: {
  routes: Record<string, RouteHandler>;
  logger: Logger;
  host: string;
  port: number;
  /** At most this many connections served at once (src/serve/connection-bound.ts); these paths on any. */
  bound?: { maxConnections: number; exempt: readonly string[] };
}): Promise<HttpServer> {
  const { routes, logger, host, port } = opts;
  let bound: ConnectionBound | undefined;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const admitted = bound ? bound.admit(req, res, url.pathname) : true;
    if (admitted === true) route(req, res, url);
    else if (admitted !== false) void admitted.then((ok) => ok && route(req, res, url));
  });
  const route = (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    const handler = routeFor(routes, url.pathname);
    if (!handler) {
      json(res, 404, { error: 'not found' });
      return;
    }
    Promise.resolve(handler(req, res, url)).catch((err: unknown) => {
      logger.error({ err, path: url.pathname }, 'request failed');
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.end();
    });
  };
  if (opts.bound) bound = new ConnectionBound(server, opts.bound.maxConnections, opts.bound.exempt);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, host, port)));
    // A burst of callbacks (a bulk edit: one connection per item event) waits in the kernel's queue instead of being refused.
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => resolve());
  });
  const addr = server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : port;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${boundPort}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
    connections: () => bound?.stats ?? { accepted: 0, open: 0, peak: 0, refused: 0, dropped: 0 },
  };
}

/** Connections waiting to be accepted (the kernel caps it at net.core.somaxconn; Node's default is 511). */
const LISTEN_BACKLOG = 4096;

/** The longest route matching the path. */
function routeFor(routes: Record<string, RouteHandler>, pathname: string): RouteHandler | undefined {
  const prefix = Object.keys(routes)
    .filter((p) => (p.endsWith('/') ? pathname.startsWith(p) : pathname === p))
    .sort((a, b) => b.length - a.length)[0];
  return prefix === undefined ? undefined : routes[prefix];
}

/** More for /healthz from another part of serve: merged into the answer; `degraded: true` makes it degraded. */
export type HealthExtra = () => Promise<{ degraded: boolean; [key: string]: unknown }>;

function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const why =
    err.code === 'EADDRINUSE' ? 'the port is in use by another process' : err.code === 'EACCES' ? 'permission denied' : err.message;
  return new Error(
    `serve cannot listen on ${host}:${port}: ${why} (${err.code ?? 'error'}). Stop the other process, or set serve.port / --port.`,
    { cause: err },
  );
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
