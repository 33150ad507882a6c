/**
 * The per-minute request tally (src/request-minutes-writer.ts,
 * src/store/request-minutes.ts): two processes counting the same minute both
 * count; the source is the run's, the applier's or the console's, whoever
 * asked; old minutes go with the run history's prune.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.js';
import { withRequestSource } from '../src/platform/request-source.js';
import { createRequestMinutesWriter } from '../src/request-minutes-writer.js';
import { startRunRetention } from '../src/serve/run-retention.js';
import { startWorld, type World } from './helpers/world.js';

let w: World;
beforeAll(async () => {
  w = await startWorld({ emulator: { items: 5 } });
});
afterAll(async () => w?.close());

const rows = async () =>
  (
    (await w.t.db.raw('select account, source, requests::int, retries::int from listsync.request_minutes order by source')) as {
      rows: { account: string; source: string; requests: number; retries: number }[];
    }
  ).rows;

describe('the request tally', () => {
  it('two writers on one minute add up; each request counts under the source it was made for', async () => {
    await w.t.db.raw('truncate listsync.request_minutes');
    const logger = createLogger({ level: 'silent', secrets: [] });
    const a = createRequestMinutesWriter({ db: w.t.db, logger, defaultSource: 'serve' });
    const b = createRequestMinutesWriter({ db: w.t.db, logger, defaultSource: 'command' });
    const event = { method: 'POST', endpoint: 'items/query', outcome: 'ok' as const, durationMs: 1, account: 'main' };
    a.onRequest({ ...event, attempt: 0 });
    withRequestSource('realtime', () => a.onRequest({ ...event, attempt: 1 }));
    withRequestSource('console', () => b.onRequest({ ...event, attempt: 0 }));
    b.onRequest({ ...event, attempt: 0 });
    a.onRequest({ ...event, attempt: 0 });
    await a.flush();
    await b.close();
    await a.close();
    expect(await rows()).toEqual([
      { account: 'main', source: 'command', requests: 1, retries: 0 },
      { account: 'main', source: 'console', requests: 1, retries: 0 },
      { account: 'main', source: 'realtime', requests: 1, retries: 1 },
      { account: 'main', source: 'serve', requests: 2, retries: 0 },
    ]);
  });

  it('a write that fails keeps its counts for the next one', async () => {
    await w.t.db.raw('truncate listsync.request_minutes');
    const logger = createLogger({ level: 'silent', secrets: [] });
    const writer = createRequestMinutesWriter({ db: w.t.db, logger, defaultSource: 'serve' });
    const event = { method: 'POST', endpoint: 'items/query', outcome: 'ok' as const, durationMs: 1, account: 'main', attempt: 0 };
    writer.onRequest(event);
    await w.t.db.raw('alter table listsync.request_minutes rename to request_minutes_away');
    try {
      await writer.flush();
    } finally {
      await w.t.db.raw('alter table listsync.request_minutes_away rename to request_minutes');
    }
    writer.onRequest(event);
    await writer.close();
    expect(await rows()).toEqual([{ account: 'main', source: 'serve', requests: 2, retries: 0 }]);
  });

  it('the run history prune removes the minutes older than serve.runHistoryDays and keeps the rest', async () => {
    await w.t.db.raw('truncate listsync.request_minutes');
    await w.t.db.raw(
      `insert into listsync.request_minutes (account, minute, source, requests, retries) values
        ('main', date_trunc('minute', now()) - interval '3 days', 'pull', 5, 0),
        ('main', date_trunc('minute', now()) - interval '1 day', 'pull', 7, 0)`,
    );
    const retention = startRunRetention({ db: w.t.db, logger: w.logger, days: 2, timing: { firstAfterMs: 0 } });
    const left = async () => (await rows()).map((r) => r.requests);
    for (let i = 0; i < 50 && (await left()).length > 1; i++) await new Promise((r) => setTimeout(r, 100));
    await retention.stop();
    expect(await left()).toEqual([7]);
  });
});
