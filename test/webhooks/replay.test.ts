import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { replayUnprocessedEvents } from '../../src/webhooks/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

describe('webhook events left unprocessed by a stopped serve', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => t?.drop());

  it('are replayed once at start: an early pull of the scheduled lists, then marked processed', async () => {
    const config = parseConfig({
      platform: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k-1234' },
      database: { url: t.url },
      lists: [
        { name: 'orders', appID: 'a', listID: 'o', schedule: { pull: '*/5 * * * *' } },
        { name: 'archive', appID: 'a', listID: 'x' },
      ],
    });
    const [sub] = (await t
      .db('listsync.webhook_subscriptions')
      .insert({ resource: 'workflow/tasks', channel: 'c', type: 1, token: 'tok-123456', callback_url: 'https://x/hooks/tok-123456' })
      .returning('id')) as { id: number }[];
    const row = (n: number, processed: boolean) => ({
      subscription_id: sub!.id,
      dedup_key: `k${n}`,
      channel: 'c',
      type: 1,
      body: JSON.stringify({ ListDataID: String(n) }),
      processed_at: processed ? t.db.fn.now() : null,
    });
    await t.db('listsync.webhook_inbox').insert([row(1, true), row(2, false), row(3, false)]);

    const pulls: string[] = [];
    expect(await replayUnprocessedEvents(t.db, config, (l) => pulls.push(l))).toBe(2);
    expect(pulls).toEqual(['orders']);
    expect(await t.db('listsync.webhook_inbox').whereNull('processed_at').count('* as n').first()).toEqual({ n: 0 });

    pulls.length = 0;
    expect(await replayUnprocessedEvents(t.db, config, (l) => pulls.push(l))).toBe(0);
    expect(pulls).toEqual([]);
  });
});
