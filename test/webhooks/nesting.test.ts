/** A body the receiver will never store is refused with a 4xx, not a 503 the platform would redeliver forever. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import { createClient } from '../../src/context.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/logger.js';
import type { PlatformClient } from '../../src/platform/client.js';
import { jobs } from '../../jobs/index.js';
import { startServe, type RunningServe } from '../../src/serve/start-serve.js';
import { createHookReceiver } from '../../src/webhooks/index.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

describe('webhook nesting depth', () => {
  let t: TestDatabase;
  let emu: RunningEmulator;
  let config: Config;
  let client: PlatformClient;
  let serve: RunningServe;
  let dir: string;
  let callbackUrl: string;
  const logger = silentLogger();
  beforeAll(async () => {
    t = await createTestDatabase();
    emu = await startEmulator({ sample: true, items: 10 });
    config = parseConfig({ platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey }, database: { url: t.url }, lists: [] });
    client = createClient(config, logger);
    const hooks = createHookReceiver({ db: t.db, config, logger });
    serve = await startServe({
      jobs,
      config,
      db: t.db,
      client,
      logger,
      schedule: false,
      port: 0,
      host: '127.0.0.1',
      routes: { '/hooks/': hooks },
    });
    dir = mkdtempSync(join(tmpdir(), 'listsync-nesting-'));
    writeFileSync(
      join(dir, 'listsync.config.json'),
      JSON.stringify({ platform: { baseUrl: emu.baseUrl }, database: { url: t.url }, lists: [] }),
    );
    const r = await runCli(['hooks', 'subscribe', '--channel', 'deep', '--type', '3', '--callback-url', serve.url], {
      cwd: dir,
      env: { PLATFORM_API_KEY: emu.apiKey },
    });
    expect(r.code, r.stderr).toBe(0);
    callbackUrl = /callback URL:\s+(\S+)/.exec(r.stdout)![1]!;
  });
  afterAll(async () => {
    await serve?.close();
    await client?.close();
    await emu?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const deliver = (body: string) =>
    fetch(callbackUrl, { method: 'POST', headers: { Channel: 'deep', Type: '3', 'Content-Type': 'application/json' }, body });
  const inbox = async () => Number(((await t.db('listsync.webhook_inbox').count({ n: '*' })) as { n: string | number }[])[0]!.n);

  it('a body nested 100,000 deep, under the size limit, is a 400 naming the depth; nothing is stored', async () => {
    const depth = 100_000;
    const body = `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    expect(body.length).toBeLessThan(config.serve.webhookBodyLimitBytes);
    const res = await deliver(body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/nest/);
    expect(await inbox()).toBe(0);
  });

  it('brackets inside strings do not count, and an ordinary nested body is stored', async () => {
    const res = await deliver(JSON.stringify({ TaskID: 't-1', Notes: '['.repeat(500), Data: { a: [[{ b: 1 }]] } }));
    expect(res.status).toBe(200);
    expect(await inbox()).toBe(1);
  });
});
