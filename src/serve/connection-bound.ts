/**
 * A bound on the connections serve's listener holds, so a burst of callbacks (a platform opening
 * one connection per item event) never runs the process out of file descriptors (EMFILE).
 *
 * - Up to `max` connections are served as usual, kept alive so a sender reuses them.
 * - A request arriving on a connection opened past `max` is served when fewer than `max` requests
 *   are being served; else it waits up to OVER_WAIT_MS for one of them to finish. Still no room:
 *   it is answered 503 with `Retry-After` and the connection closed, and the sender delivers it
 *   again later; nothing is stored. Without the wait, such a connection would answer far sooner
 *   than the others, so a sender that hands each request to its first free connection would send
 *   most of a burst into refusals (and back off further at each).
 *   Paths in `exempt` (health probes) are served on any connection.
 * - Past `2 × max` connections, new ones are closed as soon as accepted (`server.maxConnections`):
 *   the process never holds more sockets than that.
 *
 * Invariants: `peak` is the most connections the listener held at one moment; at most `2 × max`
 * requests are served at once.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Seconds a refused sender is asked to wait before delivering again. */
export const RETRY_AFTER_SECONDS = 1;
/** How long a request on a connection past the bound waits for room before it is refused. */
export const OVER_WAIT_MS = 250;

export interface ConnectionStats {
  /** Connections accepted since the start. */
  accepted: number;
  /** Connections open now. */
  open: number;
  /** The most open at one moment. */
  peak: number;
  /** Requests answered 503 because their connection was past the bound and no room came in time. */
  refused: number;
  /** Connections closed as soon as accepted (past twice the bound). */
  dropped: number;
}

export class ConnectionBound {
  private readonly over = new WeakSet<Socket>();
  private readonly stat: ConnectionStats = { accepted: 0, open: 0, peak: 0, refused: 0, dropped: 0 };
  /** Requests being served (exempt paths aside). */
  private serving = 0;
  /** Requests on connections past the bound, waiting for room, oldest first. */
  private readonly waiting: Array<() => void> = [];

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

  /**
   * Whether to serve the request: true at once on a connection within the bound (or an exempt
   * path); on one past it, once there is room. False when it was answered 503 instead.
   */
  admit(req: IncomingMessage, res: ServerResponse, pathname: string): boolean | Promise<boolean> {
    if (this.exempt.includes(pathname)) return true;
    if (!this.over.has(req.socket) || this.serving < this.max) return this.serve(res);
    return this.room().then((ok) => {
      if (req.socket.destroyed) {
        // The sender gave up while it waited: its room goes to the next one.
        if (ok) this.next();
        return false;
      }
      return ok ? this.serve(res) : this.refuse(res);
    });
  }

  private serve(res: ServerResponse): true {
    this.serving++;
    res.once('close', () => {
      this.serving--;
      this.next();
    });
    return true;
  }

  /** Wakes the oldest waiting request when there is room. */
  private next(): void {
    if (this.serving < this.max) this.waiting.shift()?.();
  }

  /** Resolves true when a request finished and left room, false after OVER_WAIT_MS. */
  private room(): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(wake);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      }, OVER_WAIT_MS);
      this.waiting.push(wake);
    });
  }

  private refuse(res: ServerResponse): false {
    this.stat.refused++;
    const text = JSON.stringify({ ok: false, error: `too many connections (over ${this.max}); try again` });
    res.writeHead(503, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      'retry-after': String(RETRY_AFTER_SECONDS),
      connection: 'close',
    });
    res.end(text);
    return false;
  }
}
