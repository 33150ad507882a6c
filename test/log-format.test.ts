/** Log output for people on a terminal, JSON for machines, and no key twice on a line. */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatLine, resolveLogFormat } from '../src/log-format.js';
import { createLogger } from '../src/logger.js';
import { jobs } from '../jobs/index.js';
import { startServe } from '../src/serve/start-serve.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('log format', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 300 }, list: { pageSize: 100 } });
  });
  afterAll(async () => w?.close());

  it('is pretty on a terminal and JSON otherwise, unless asked', () => {
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat(undefined, false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('a pull finished entry becomes one short line', () => {
    const entry = {
      level: 'info',
      time: '2026-01-02T03:04:05.678Z',
      name: 'listsync',
      list: 'orders',
      runId: 7,
      job: 'pull',
      pages: 3,
      requests: 4,
      retries: 0,
      rows_inserted: 300,
      rows_updated: 0,
      rows_unchanged: 0,
      rows_deleted: 0,
      rows_undeleted: 0,
      rows_failed: 0,
      rows_skipped_pending: 0,
      changes_applied: 0,
      changes_conflicted: 0,
      changes_failed: 0,
      watermark: '2026-01-02',
      msg: 'pull finished',
    };
    const line = formatLine(JSON.stringify(entry), false);
    expect(line).toBe('03:04:05 INFO  orders pull: pull finished  pages=3 requests=4 rows_inserted=300 watermark=2026-01-02');
    expect(formatLine(JSON.stringify({ ...entry, level: 'error' }), true)).toContain('\x1b[31mERROR');
  });

  it('--log-format pretty prints human lines; without a terminal the default stays JSON', async () => {
    const env = { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' };
    const pretty = await runCli(['--config', w.configFile, '--log-format', 'pretty', 'pull'], { env, cwd: w.cwd });
    expect(pretty.code, pretty.stderr).toBe(0);
    const lines = pretty.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(l).toMatch(/^\d\d:\d\d:\d\d (INFO|WARN) /);
    expect(pretty.stderr).toContain('orders pull: pull finished');
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(200);

    const json = await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd });
    expect(json.code).toBe(0);
    for (const l of json.stderr.trim().split('\n')) expect(() => JSON.parse(l) as unknown).not.toThrow();
  });

  it('serve job lines name job and list once', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    const logger = createLogger({ level: 'info', destination: sink });
    const serve = await startServe({
      jobs,
      config: w.config,
      db: w.t.db,
      client: w.client,
      logger,
      schedule: false,
      port: 0,
      host: '127.0.0.1',
    });
    try {
      await serve.runNow('pull', 'orders');
    } finally {
      await serve.close();
    }
    const jobLines = lines.filter((l) => l.includes('"job"'));
    expect(jobLines.length).toBeGreaterThan(0);
    for (const l of jobLines) {
      expect(l.match(/"job":/g), l).toHaveLength(1);
      expect(l.match(/"list":/g)?.length ?? 0, l).toBeLessThanOrEqual(1);
    }
  });
});

describe('one line shape', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 250 }, list: { pageSize: 100 } });
  });
  afterAll(async () => w?.close());

  it('an error reads as the platform wrote it (no quotes escaped twice), numbers with separators', () => {
    const line = formatLine(
      JSON.stringify({
        level: 'error',
        time: '2026-01-02T03:04:05.678Z',
        name: 'listsync',
        list: 'orders',
        job: 'pull',
        items: 1234567,
        err: { type: 'NotFoundError', message: 'POST /lists/demo/x/items/query failed: HTTP 200, Status 40400 "List demo/x not found"' },
        msg: 'failed',
      }),
      false,
    );
    expect(line).toBe(
      '03:04:05 ERROR orders pull: failed  items=1,234,567 — POST /lists/demo/x/items/query failed: HTTP 200, Status 40400 "List demo/x not found"',
    );
  });

  const shapeOf = (stderr: string) =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('every line of pull, backfill and reconcile carries level, time, name, list and job', async () => {
    const env = { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' };
    // reconcile --full: a reconcile by counts whose counts agree reads no page.
    for (const args of [['pull'], ['backfill', '--list', 'orders', '--from', '2000-01-01'], ['reconcile', '--full']]) {
      const r = await runCli(['--config', w.configFile, ...args], { env, cwd: w.cwd });
      expect(r.code, r.stderr).toBe(0);
      const lines = shapeOf(r.stderr);
      expect(lines.filter((l) => l.msg === 'page').length, args[0]).toBeGreaterThan(0);
      for (const l of lines)
        expect(Object.keys(l), JSON.stringify(l)).toEqual(expect.arrayContaining(['level', 'time', 'name', 'list', 'job']));
      expect(r.stderr.split('\n').filter((l) => l.trim() && !l.startsWith('{'))).toEqual([]);
    }
  });

  it('push and directory write a page line per batch or table, shaped like every other line', async () => {
    const env = { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' };
    expect((await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd })).code).toBe(0);
    await w.t.db.raw(`update mirror.orders set customer = 'page line' where id in (select id from mirror.orders order by id limit 3)`);
    for (const [args, job] of [
      [['push'], 'push'],
      [['directory'], 'directory'],
    ] as const) {
      const r = await runCli(['--config', w.configFile, ...args], { env, cwd: w.cwd });
      expect(r.code, r.stderr).toBe(0);
      const pages = shapeOf(r.stderr).filter((l) => l.msg === 'page');
      expect(pages.length, job).toBeGreaterThan(0);
      for (const l of pages) expect(l).toMatchObject({ level: 'info', name: 'listsync', job });
    }
  });

  it('a pull that fails before its first page still writes its error line', async () => {
    const r = await runCli(['--config', w.configFile, 'pull'], { env: { PLATFORM_API_KEY: 'REFUSED-KEY-1234' }, cwd: w.cwd });
    expect(r.code).toBe(2);
    expect(shapeOf(r.stderr)).toContainEqual(
      expect.objectContaining({
        level: 'error',
        name: 'listsync',
        list: 'orders',
        job: 'pull',
        msg: expect.stringMatching(/failed/) as string,
      }),
    );
    expect(r.stderr).toMatch(/^orders: pull failed: /m);
  });
});
