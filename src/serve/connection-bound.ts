/**
 * A bound on the connections serve's listener holds, so a burst of callbacks (a platform opening
 * one connection per item event) never runs the process out of file descriptors (EMFILE).
 *
 * - Up to `max` connections are served as usual, kept alive so a sender reuses them.
 * - A request arriving on a connection opened past `max` is answered at once 503 with
 *   `Retry-After` and the connection closed: the sender delivers it again later; nothing is stored.
 *   Paths in `exempt` (health probes) are served on any connection.
 * - Past `2 × max` connections, new ones are closed as soon as accepted (`server.maxConnections`):
 *   the process never holds more sockets than that.
 *
 * Invariant: `peak` is the most connections the listener held at one moment.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Seconds a refused sender is asked to wait before delivering again. */
export const RETRY_AFTER_SECONDS = 1;

export interface ConnectionStats {
  /** Connections accepted since the start. */
  accepted: number;
  /** Connections open now. */
  open: number;
  /** The most open at one moment. */
  peak: number;
  /** Requests answered 503 because their connection was past the bound. */
  refused: number;
  /** Connections closed as soon as accepted (past twice the bound). */
  dropped: number;
}

export class ConnectionBound {
  private readonly over = new WeakSet<Socket>();
  private readonly stat: ConnectionStats = { accepted: 0, open: 0, peak: 0, refused: 0, dropped: 0 };

  constructor(
    server: Server,
    readonly max: number,
    private readonly exempt: readonly string[] = [],
  ) {
    server.maxConnections = 2 * max;
    server.on('drop', () => this.stat.dropped++);
    server.on('connection', (socket: Socket) => {
      this.stat.accepted++;
      this.stat.open++;
      this.stat.peak = Math.max(this.stat.peak, this.stat.open);
      if (this.stat.open > max) this.over.add(socket);
      socket.once('close', () => this.stat.open--);
    });
  }

  get stats(): ConnectionStats {
    return { ...this.stat };
  }

  /** Answers 503 (and returns true) when the request came on a connection past the bound. */
  refuse(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
    if (!this.over.has(req.socket) || this.exempt.includes(pathname)) return false;
    this.stat.refused++;
    const text = JSON.stringify({ ok: false, error: `too many connections (over ${this.max}); try again` });
    res.writeHead(503, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      'retry-after': String(RETRY_AFTER_SECONDS),
      connection: 'close',
    });
    res.end(text);
    return true;
  }
}
