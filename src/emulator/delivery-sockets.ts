import { Agent as HttpAgent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';

/** Callback sockets the emulator keeps open at most, per callback host, unless told otherwise. */
export const DEFAULT_DELIVERY_SOCKETS = 64;

/**
 * An idle kept-alive socket is closed after this long (or 1 s before the receiver's own
 * `Keep-Alive: timeout=N`, whichever is sooner), so a delivery never reuses a socket the
 * receiver is closing.
 */
const IDLE_SOCKET_MS = 4000;

/**
 * The sockets callbacks go out on. With a bound (`sockets` > 0): keep-alive agents that hold at
 * most `sockets` connections per callback host; further deliveries wait in the agent's queue, and
 * their answer timeout starts only once they have a socket. With 0, the unbounded form: a new
 * connection per delivery (`Connection: close`), every one opened at once, as a platform that
 * does not pool might.
 *
 * Invariant: `peak` is the most sockets this emulator had open to callback hosts at one moment.
 */
export class DeliverySockets {
  private readonly httpAgent?: HttpAgent;
  private readonly httpsAgent?: HttpsAgent;
  private readonly open = new Set<Socket>();
  private peakOpen = 0;

  constructor(readonly bound: number) {
    if (bound <= 0) return;
    const options = { keepAlive: true, maxSockets: bound, maxTotalSockets: bound, maxFreeSockets: bound, timeout: IDLE_SOCKET_MS };
    this.httpAgent = new HttpAgent(options);
    this.httpsAgent = new HttpsAgent(options);
  }

  /** The `agent` and `Connection` header a request to this protocol goes out with. */
  requestOptions(protocol: string): { agent: HttpAgent | false; connection: 'keep-alive' | 'close' } {
    const agent = protocol === 'https:' ? this.httpsAgent : this.httpAgent;
    return agent ? { agent, connection: 'keep-alive' } : { agent: false, connection: 'close' };
  }

  /** Counts the socket the request gets (once per socket, however many requests reuse it). */
  track(req: ClientRequest): void {
    req.once('socket', (socket: Socket) => {
      if (this.open.has(socket)) return;
      this.open.add(socket);
      this.peakOpen = Math.max(this.peakOpen, this.open.size);
      socket.once('close', () => this.open.delete(socket));
    });
  }

  get openNow(): number {
    return this.open.size;
  }

  get peak(): number {
    return this.peakOpen;
  }

  /** Starts counting the peak again from the sockets open now. */
  resetPeak(): void {
    this.peakOpen = this.open.size;
  }

  /** Closes every socket, idle or busy. */
  destroy(): void {
    this.httpAgent?.destroy();
    this.httpsAgent?.destroy();
    for (const s of this.open) s.destroy();
    this.open.clear();
  }
}
