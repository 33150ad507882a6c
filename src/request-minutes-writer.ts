/**
 * The per-minute request tally of one process: every attempt its platform
 * clients report (`onRequest`) is counted in memory by account, minute and
 * source (src/platform/request-source.ts), and the counts are added to
 * `listsync.request_minutes` every few seconds in one statement, never a row
 * per request (src/store/request-minutes.ts).
 *
 * - A failed write keeps its counts for the next one (a database away loses
 *   nothing while the process lives); `close()` writes what is left.
 * - The writer holds no connection between writes; a write under way when
 *   the next is due is not doubled.
 * - At most the last few seconds of counts are lost if the process dies.
 */
import type { Knex } from './db.js';
import { coerceError } from './errors.js';
import type { Logger } from './logger.js';
import type { RequestEvent } from './platform/client.js';
import { currentRequestSource } from './platform/request-source.js';
import { addRequestMinutes, type RequestMinute } from './store/request-minutes.js';

export const REQUEST_MINUTES_FLUSH_MS = 5000;

/** PostgreSQL's undefined_table. */
const UNDEFINED_TABLE = '42P01';

export interface RequestMinutesWriter {
  /** Pass as the clients' `onRequest` (src/account-clients.ts sets the account). */
  onRequest(event: RequestEvent): void;
  /** Writes the counts held now; resolves once they are written (or kept after a failure). */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

export function createRequestMinutesWriter(opts: {
  db: Knex;
  logger: Logger;
  /** The source of requests made outside any run, the applier or the console: `serve` or `command`. */
  defaultSource: string;
  everyMs?: number;
  /** A command that may run without the database (discover): a failed write is logged at debug only. */
  optional?: boolean;
}): RequestMinutesWriter {
  let held = new Map<string, RequestMinute>();
  let writing: Promise<void> = Promise.resolve();

  const count = (e: RequestEvent) => {
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const row = { account: e.account ?? 'default', minute, source: currentRequestSource() ?? opts.defaultSource };
    const key = `${row.account}\u0000${minute.getTime()}\u0000${row.source}`;
    const known = held.get(key) ?? { ...row, requests: 0, retries: 0 };
    known.requests += 1;
    if (e.attempt > 0) known.retries += 1;
    held.set(key, known);
  };

  const writeHeld = async () => {
    if (held.size === 0) return;
    const batch = held;
    held = new Map();
    try {
      await addRequestMinutes(opts.db, [...batch.values()]);
    } catch (err) {
      for (const [key, r] of batch) {
        const now = held.get(key);
        held.set(key, now ? { ...r, requests: r.requests + now.requests, retries: r.retries + now.retries } : r);
      }
      // Before `listsync migrate` the table is missing: the counts are kept quietly (a command may run before it).
      const level = opts.optional || (err as { code?: string }).code === UNDEFINED_TABLE ? 'debug' : 'warn';
      opts.logger[level]({ err: coerceError(err) }, 'request tally: could not write the last seconds’ counts; trying again');
    }
  };

  const flush = () => (writing = writing.then(writeHeld));
  const timer = setInterval(() => void flush(), opts.everyMs ?? REQUEST_MINUTES_FLUSH_MS);
  timer.unref();
  return {
    onRequest: count,
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
