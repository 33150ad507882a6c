/**
 * Webhooks end to end: `listsync hooks subscribe` (the real binary) against
 * the emulator, serve's receiver in process over real HTTP, a real Postgres.
 */
import { request } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import { createClient } from '../../src/context.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { PlatformClient } from '../../src/platform/client.js';
import { jobs } from '../../jobs/index.js';
import { startServe, type RunningServe } from '../../src/serve/start-serve.js';
import { createHookReceiver, earlyPullOnItemEvent, listsToPullFor, type ItemEvent } from '../../src/webhooks/index.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const logger = createLogger({ level: 'silent' });
const LIMIT = 2048;

interface Answer {
  status: number;
  body: string;
}

/** A raw POST: full control over headers, and chunked bodies (no Content-Length). */
function post(
  url: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; chunks?: Buffer[]; method?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'POST', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.chunks) {
      for (const c of options.chunks) req.write(c);
      req.end();
    } else req.end(options.body);
  });
}

describe('webhooks', () => {
  let t: TestDatabase;
  let emu: RunningEmulator;
  let config: Config;
  let client: PlatformClient;
  let serve: RunningServe;
  let metrics: Metrics;
  let dir: string;
  let callbackUrl: string;
  let subscriptionId: number;
  const itemEvents: ItemEvent[] = [];
  const pullsRequested: string[] = [];

  const inboxCount = async (): Promise<number> =>
    Number(((await t.db('listsync.webhook_inbox').count({ n: '*' })) as { n: string | number }[])[0]!.n);
  const good = () => ({ Channel: 'orders-tasks', Type: '3', 'Content-Type': 'application/json' });
  const body = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ TaskID: 't-1', WorkflowID: 'wf-1', Event: 'created', Assignee: 'u-1', Created: '2026-11-22 10:00:00', ...extra });

  beforeAll(async () => {
    t = await createTestDatabase();
    emu = await startEmulator({ sample: true, items: 50, rateLimit: { burst: 50, perSecond: 50 } });
    config = parseConfig({
      platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey, requestsPerSecond: 50 },
      database: { url: t.url },
      lists: [
        { name: 'orders', appID: 'demo', listID: 'orders', schedule: { pull: '0 3 * * *' } },
        { name: 'orders_copy', appID: 'demo', listID: 'orders' },
      ],
      serve: { webhookBodyLimitBytes: LIMIT },
    });
    client = createClient(config, logger);
    metrics = createMetrics({ db: t.db, config, defaultMetrics: false });
    const early = earlyPullOnItemEvent(config, (l) => pullsRequested.push(l));
    const hooks = createHookReceiver({
      db: t.db,
      config,
      logger,
      onItemEvent: (e) => {
        itemEvents.push(e);
        early(e);
      },
      onOutcome: metrics.onWebhook,
    });
    serve = await startServe({
      jobs,
      config,
      db: t.db,
      client,
      logger,
      schedule: false,
      port: 0,
      host: '127.0.0.1',
      routes: { '/hooks/': hooks, '/metrics': metrics.handler },
    });
    dir = mkdtempSync(join(tmpdir(), 'listsync-hooks-'));
    writeFileSync(
      join(dir, 'listsync.config.json'),
      JSON.stringify({ platform: { baseUrl: emu.baseUrl }, database: { url: t.url }, lists: [] }),
    );
  });
  afterAll(async () => {
    await serve?.close();
    await client?.close();
    await emu?.close();
    await t?.drop();
  });

  it('hooks subscribe without a public URL exits 2 and names serve.publicUrl', async () => {
    const r = await runCli(['hooks', 'subscribe', '--channel', 'orders-tasks', '--type', '3'], {
      cwd: dir,
      env: { PLATFORM_API_KEY: emu.apiKey },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('serve.publicUrl');
    const bad = await runCli(['hooks', 'subscribe', '--channel', 'orders-tasks', '--type', 'three', '--callback-url', serve.url], {
      cwd: dir,
      env: { PLATFORM_API_KEY: emu.apiKey },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--type');
  });

  it('hooks subscribe creates the subscription on the platform and prints the callback URL', async () => {
    const r = await runCli(['hooks', 'subscribe', '--channel', 'orders-tasks', '--type', '3', '--callback-url', serve.url], {
      cwd: dir,
      env: { PLATFORM_API_KEY: emu.apiKey },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const m = /callback URL:\s+(\S+)/.exec(r.stdout);
    expect(m).not.toBeNull();
    callbackUrl = m![1]!;
    expect(callbackUrl).toMatch(new RegExp(`^${serve.url}/hooks/[A-Za-z0-9_-]{32}$`));
    expect(r.stdout).toContain('platform subscription ID: hook-1');

    const rows = (await t.db('listsync.webhook_subscriptions').select()) as {
      id: number;
      platform_id: string;
      resource: string;
      channel: string;
      type: number;
      token: string;
      callback_url: string;
    }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      platform_id: 'hook-1',
      resource: 'workflow/tasks',
      channel: 'orders-tasks',
      type: 3,
      callback_url: callbackUrl,
    });
    expect(callbackUrl.endsWith(rows[0]!.token)).toBe(true);
    subscriptionId = Number(rows[0]!.id);
    const onPlatform = await emu.admin.hooks();
    expect(onPlatform.subscriptions).toEqual([
      expect.objectContaining({ Id: 'hook-1', Resource: 'workflow/tasks', Channel: 'orders-tasks', Type: 3, Settings: { callbackUrl } }),
    ]);
  });

  it('stores each fired event once; a replayed delivery is not stored again; item events ask for early pulls', async () => {
    const first = await emu.admin.fireHook({ event: { ListDataID: '1234567890123456789' } });
    expect(first.map((d) => d.statusCode)).toEqual([200]);
    const second = await emu.admin.fireHook({ event: { Event: 'completed' } });
    expect(second.map((d) => d.statusCode)).toEqual([200]);
    expect(await inboxCount()).toBe(2);

    const replay = await emu.admin.redeliver(first[0]!.index);
    expect(replay.statusCode).toBe(200);
    const replay2 = await emu.admin.redeliver(second[0]!.index);
    expect(replay2.statusCode).toBe(200);
    expect(await inboxCount()).toBe(2);

    // Only the new event naming an item was handed on (the replay was not), and it asks for a pull of the scheduled list.
    expect(itemEvents).toHaveLength(1);
    expect(itemEvents[0]).toMatchObject({
      subscriptionId,
      resource: 'workflow/tasks',
      channel: 'orders-tasks',
      type: 3,
      listDataId: '1234567890123456789',
    });
    expect(pullsRequested).toEqual(['orders']);
    expect(listsToPullFor(config).map((l) => l.name)).toEqual(['orders']);

    const events = (await t.db('listsync.workflow_task_events').orderBy('id').select()) as Record<string, unknown>[];
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ channel: 'orders-tasks', type: 3, list_data_id: '1234567890123456789', event: expect.any(String) });
    expect(events[0]!.task_id).toEqual(expect.any(String));
    expect(events[0]!.processed_at).not.toBeNull();
    expect(events[1]).toMatchObject({ list_data_id: null, event: 'completed' });
  });

  it('answers 200 {ok, duplicate}; key order and spacing do not make a new delivery; IDs keep every digit', async () => {
    const before = await inboxCount();
    const a = await post(callbackUrl, { headers: good(), body: '{"TaskID":"t-9","ListDataID":12345678901234567890,"Event":"x"}' });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ ok: true, duplicate: false });
    const b = await post(callbackUrl, { headers: good(), body: '{ "Event": "x",\n "ListDataID": 12345678901234567890, "TaskID": "t-9" }' });
    expect(JSON.parse(b.body)).toEqual({ ok: true, duplicate: true });
    expect(await inboxCount()).toBe(before + 1);
    const row = (await t.db('listsync.workflow_task_events').where({ task_id: 't-9' }).first('list_data_id')) as { list_data_id: string };
    expect(row.list_data_id).toBe('12345678901234567890');
    expect(itemEvents.at(-1)?.listDataId).toBe('12345678901234567890');
  });

  it('the same delivery arriving many times at once is stored once', async () => {
    const before = await inboxCount();
    const payload = body({ TaskID: 'race-1' });
    const answers = await Promise.all(Array.from({ length: 12 }, () => post(callbackUrl, { headers: good(), body: payload })));
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    const duplicates = answers.map((a) => (JSON.parse(a.body) as { duplicate: boolean }).duplicate);
    expect(duplicates.filter((d) => !d)).toHaveLength(1);
    expect(await inboxCount()).toBe(before + 1);
  });

  it('rejects wrong token, channel, type, content type, size and body with the stated 4xx and stores nothing', async () => {
    const before = await inboxCount();
    const base = serve.url;
    const cases: [string, Promise<Answer>, number][] = [
      ['unknown token', post(`${base}/hooks/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`, { headers: good(), body: body() }), 404],
      ['no token', post(`${base}/hooks/`, { headers: good(), body: body() }), 404],
      ['wrong channel', post(callbackUrl, { headers: { ...good(), Channel: 'other' }, body: body() }), 403],
      ['missing channel', post(callbackUrl, { headers: { Type: '3', 'Content-Type': 'application/json' }, body: body() }), 403],
      ['wrong type', post(callbackUrl, { headers: { ...good(), Type: '4' }, body: body() }), 400],
      ['non-integer type', post(callbackUrl, { headers: { ...good(), Type: 'three' }, body: body() }), 400],
      ['missing type', post(callbackUrl, { headers: { Channel: 'orders-tasks', 'Content-Type': 'application/json' }, body: body() }), 400],
      ['text/plain', post(callbackUrl, { headers: { ...good(), 'Content-Type': 'text/plain' }, body: body() }), 415],
      ['no content type', post(callbackUrl, { headers: { Channel: 'orders-tasks', Type: '3' }, body: body() }), 415],
      [
        'latin1 charset',
        post(callbackUrl, { headers: { ...good(), 'Content-Type': 'application/json; charset=iso-8859-1' }, body: body() }),
        415,
      ],
      ['oversized (Content-Length)', post(callbackUrl, { headers: good(), body: body({ Notes: 'x'.repeat(LIMIT) }) }), 413],
      [
        'oversized (chunked)',
        post(callbackUrl, {
          headers: good(),
          chunks: [Buffer.from(body({ Notes: 'y'.repeat(LIMIT) }).slice(0, 1500)), Buffer.alloc(4096, 0x20)],
        }),
        413,
      ],
      ['malformed JSON', post(callbackUrl, { headers: good(), body: '{"TaskID": "t-1",' }), 400],
      ['JSON array', post(callbackUrl, { headers: good(), body: '[1,2]' }), 400],
      ['JSON null', post(callbackUrl, { headers: good(), body: 'null' }), 400],
      [
        'invalid UTF-8',
        post(callbackUrl, { headers: good(), body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]) }),
        400,
      ],
      ['NUL escape', post(callbackUrl, { headers: good(), body: '{"TaskID":"a\\u0000b"}' }), 400],
      ['GET', post(callbackUrl, { method: 'GET' }), 405],
    ];
    for (const [name, answer, status] of cases) {
      const a = await answer;
      expect({ name, status: a.status }).toEqual({ name, status });
      expect((JSON.parse(a.body) as { ok: boolean }).ok).toBe(false);
    }
    expect(await inboxCount()).toBe(before);
  });

  it('counts accepted and rejected callbacks in /metrics', async () => {
    const text = await (await fetch(`${serve.url}/metrics`)).text();
    expect(text).toMatch(/^listsync_webhook_events_total\{result="accepted",reason="new"\} [1-9]/m);
    expect(text).toMatch(/^listsync_webhook_events_total\{result="accepted",reason="duplicate"\} [1-9]/m);
    expect(text).toMatch(/^listsync_webhook_events_total\{result="rejected",reason="too_large"\} 2$/m);
    expect(text).toMatch(/^listsync_webhook_events_total\{result="rejected",reason="unknown_token"\} 2$/m);
    expect(text).toMatch(/^listsync_webhook_subscriptions 1$/m);
  });

  it('hooks list shows the subscription with a masked token and its event count; status shows the activity', async () => {
    const events = await inboxCount();
    const r = await runCli(['hooks', 'list'], { cwd: dir, env: { PLATFORM_API_KEY: emu.apiKey } });
    expect(r.code).toBe(0);
    const token = callbackUrl.split('/').at(-1)!;
    expect(r.stdout).not.toContain(token);
    expect(r.stdout).toContain(`********${token.slice(-4)}`);
    expect(r.stdout).toMatch(new RegExp(`hook-1\\s+workflow/tasks\\s+orders-tasks\\s+3\\s+\\S+\\s+${events}\\s`));
    const s = await runCli(['status'], { cwd: dir, env: { PLATFORM_API_KEY: emu.apiKey } });
    expect(s.code).toBe(0);
    expect(s.stdout).toContain(`webhooks: 1 subscription(s), ${events} event(s) in the last day`);
  });
});
