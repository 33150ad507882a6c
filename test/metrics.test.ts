/**
 * /metrics parses as Prometheus text exposition and moves when a pull runs;
 * /healthz turns degraded when a list's lag passes serve.maxLagMinutes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../src/config.js';
import { startEmulator, type RunningEmulator } from '../src/emulator/index.js';
import { createLogger } from '../src/logger.js';
import { createMetrics, type Metrics } from '../src/metrics.js';
import { PlatformClient } from '../src/platform/client.js';
import { jobs } from '../jobs/index.js';
import { startServe, type RunningServe } from '../src/serve/start-serve.js';
import { pullList } from '../src/sync/pull.js';
import { reconcileList } from '../src/sync/reconcile.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

const logger = createLogger({ level: 'silent' });

// ---- a strict parser of the text exposition format (version 0.0.4) ------------

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function parseValue(s: string, line: number): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`line ${line}: bad value ${JSON.stringify(s)}`);
  return Number(s);
}

function parseLabels(s: string, line: number): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < s.length) {
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`line ${line}: label without "="`);
    const name = s.slice(i, eq);
    if (!LABEL.test(name)) throw new Error(`line ${line}: bad label name ${JSON.stringify(name)}`);
    if (s[eq + 1] !== '"') throw new Error(`line ${line}: label value not quoted`);
    let j = eq + 2;
    let value = '';
    for (;;) {
      if (j >= s.length) throw new Error(`line ${line}: unterminated label value`);
      const c = s[j]!;
      if (c === '\\') {
        const n = s[j + 1];
        if (n === 'n') value += '\n';
        else if (n === '\\' || n === '"') value += n;
        else throw new Error(`line ${line}: bad escape \\${n ?? ''}`);
        j += 2;
      } else if (c === '"') {
        j++;
        break;
      } else {
        value += c;
        j++;
      }
    }
    if (name in out) throw new Error(`line ${line}: duplicate label ${name}`);
    out[name] = value;
    if (j === s.length) break;
    if (s[j] !== ',') throw new Error(`line ${line}: expected "," after a label`);
    i = j + 1;
  }
  return out;
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  if (families.has(sample)) return families.get(sample);
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (sample.endsWith(suffix)) {
      const f = families.get(sample.slice(0, -suffix.length));
      if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
    }
  }
  return undefined;
}

export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  text
    .slice(0, -1)
    .split('\n')
    .forEach((raw, idx) => {
      const line = idx + 1;
      if (raw === '') return;
      if (raw.startsWith('#')) {
        const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
        if (!m) {
          if (/^# (HELP|TYPE)/.test(raw)) throw new Error(`line ${line}: malformed ${raw}`);
          return; // a plain comment
        }
        const [, kind, name, rest] = m as unknown as [string, string, string, string];
        if (!NAME.test(name)) throw new Error(`line ${line}: bad metric name ${name}`);
        const f = families.get(name) ?? { name, type: 'untyped' as const, help: '', samples: [] };
        if (kind === 'TYPE') {
          if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`line ${line}: bad type ${rest}`);
          if (f.samples.length) throw new Error(`line ${line}: TYPE after samples of ${name}`);
          f.type = rest as Family['type'];
        } else f.help = rest;
        families.set(name, f);
        return;
      }
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(raw);
      if (!m) throw new Error(`line ${line}: not a sample: ${raw}`);
      const [, name, labelText, valueText] = m as unknown as [string, string, string | undefined, string];
      const labels = labelText ? parseLabels(labelText, line) : {};
      const value = parseValue(valueText, line);
      const f = familyOf(name, families);
      if (!f) throw new Error(`line ${line}: sample ${name} has no TYPE`);
      if (f.type === 'counter' && !(value >= 0)) throw new Error(`line ${line}: counter ${name} is ${value}`);
      const key = `${name}{${Object.entries(labels)
        .sort()
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}}`;
      if (seen.has(key)) throw new Error(`line ${line}: duplicate series ${key}`);
      seen.add(key);
      f.samples.push({ name, labels, value });
    });
  for (const f of families.values()) {
    if (f.type !== 'histogram') continue;
    const groups = new Map<string, Sample[]>();
    for (const s of f.samples.filter((x) => x.name === `${f.name}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${f.name}_bucket without le`);
      const k = JSON.stringify(rest);
      groups.set(k, [...(groups.get(k) ?? []), s]);
    }
    for (const [k, buckets] of groups) {
      let prev = -1;
      for (const b of buckets) {
        if (b.value < prev) throw new Error(`${f.name}${k}: buckets not cumulative`);
        prev = b.value;
      }
      const inf = buckets.find((b) => b.labels.le === '+Inf');
      const count = f.samples.find(
        (s) => s.name === `${f.name}_count` && JSON.stringify(Object.fromEntries(Object.entries(s.labels))) === k,
      );
      if (!inf || !count || inf.value !== count.value) throw new Error(`${f.name}${k}: +Inf bucket and _count disagree`);
    }
  }
  return families;
}

function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const f = familyOf(name, families);
  const s = f?.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value;
}

// ---- the tests ------------------------------------------------------------------

describe('metrics', () => {
  let t: TestDatabase;
  let emu: RunningEmulator;
  let config: Config;
  let client: PlatformClient;
  let metrics: Metrics;
  let serve: RunningServe;

  const scrape = async (): Promise<Map<string, Family>> => {
    const res = await fetch(`${serve.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition(await res.text());
  };

  beforeAll(async () => {
    t = await createTestDatabase();
    emu = await startEmulator({ sample: true, items: 1500, rateLimit: { burst: 50, perSecond: 50 } });
    config = parseConfig({
      platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey, requestsPerSecond: 50 },
      database: { url: t.url },
      lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      serve: { maxLagMinutes: 60 },
    });
    metrics = createMetrics({ db: t.db, config, logger });
    client = new PlatformClient({ config: config.platform, logger, onRequest: metrics.onRequest });
    serve = await startServe({
      jobs,
      config,
      db: t.db,
      client,
      logger,
      schedule: false,
      port: 0,
      host: '127.0.0.1',
      routes: { '/metrics': metrics.handler },
    });
  });
  afterAll(async () => {
    await serve?.close();
    await client?.close();
    await emu?.close();
    await t?.drop();
  });

  it('parses strictly, and moves when a pull and a reconcile run', async () => {
    const before = await scrape();
    expect(before.get('listsync_rows_total')?.type).toBe('counter');
    expect(before.get('listsync_lag_seconds')?.type).toBe('gauge');
    expect(before.get('listsync_run_duration_seconds')?.type).toBe('histogram');
    expect(value(before, 'listsync_database_up')).toBe(1);
    expect(value(before, 'listsync_rows_total', { list: 'orders', kind: 'inserted' }) ?? 0).toBe(0);
    expect(value(before, 'listsync_lag_seconds', { list: 'orders' })).toBeUndefined();
    expect(value(before, 'listsync_platform_requests_total', { endpoint: 'items/query', outcome: 'ok' }) ?? 0).toBe(0);
    // Process metrics are there too, on our own registry.
    expect(before.has('listsync_process_resident_memory_bytes')).toBe(true);

    await pullList({ db: t.db, client, config, logger }, config.lists[0]!);
    const ids = (await emu.admin.exportList('demo', 'orders')).items.slice(0, 5).map((i) => String(i.ListDataID));
    for (const id of ids) await emu.admin.deleteItem('demo', 'orders', id);
    await reconcileList({ db: t.db, client, config, logger }, config.lists[0]!);

    const after = await scrape();
    expect(value(after, 'listsync_rows_total', { list: 'orders', kind: 'inserted' })).toBe(1500);
    expect(value(after, 'listsync_rows_total', { list: 'orders', kind: 'deleted' })).toBe(5);
    expect(value(after, 'listsync_mirror_rows', { list: 'orders', state: 'live' })).toBe(1495);
    expect(value(after, 'listsync_mirror_rows', { list: 'orders', state: 'deleted' })).toBe(5);
    const lag = value(after, 'listsync_lag_seconds', { list: 'orders' });
    expect(lag).toBeGreaterThanOrEqual(0);
    expect(lag).toBeLessThan(60);
    expect(value(after, 'listsync_platform_requests_total', { endpoint: 'items/query', outcome: 'ok' })).toBeGreaterThanOrEqual(2 + 2);
    expect(value(after, 'listsync_runs_total', { list: 'orders', job: 'pull', status: 'succeeded' })).toBe(1);
    expect(value(after, 'listsync_run_duration_seconds_count', { job: 'pull', status: 'succeeded' })).toBe(1);
    expect(value(after, 'listsync_run_duration_seconds_count', { job: 'reconcile', status: 'succeeded' })).toBe(1);
    expect(value(after, 'listsync_changes', { list: 'orders', state: 'pending' })).toBe(0);
    expect(value(after, 'listsync_conflicts_open', { list: 'orders' })).toBe(0);

    // Run durations are observed once, not again on the next scrape.
    const again = await scrape();
    expect(value(again, 'listsync_run_duration_seconds_count', { job: 'pull', status: 'succeeded' })).toBe(1);
  });

  it('reports per run what the dashboard and alerts read: rows changed, pages, requests, failures in a row, healed rows, limits', async () => {
    const first = await scrape();
    // The first test's pull inserted 1500 rows; its reconcile marked 5 deleted.
    expect(value(first, 'listsync_last_run_rows_changed', { list: 'orders', job: 'pull' })).toBe(1500);
    expect(value(first, 'listsync_last_run_rows_changed', { list: 'orders', job: 'reconcile' })).toBe(5);
    expect(value(first, 'listsync_last_run_pages', { list: 'orders', job: 'pull' })).toBeGreaterThanOrEqual(2);
    expect(value(first, 'listsync_last_run_requests', { list: 'orders', job: 'pull' })).toBeGreaterThanOrEqual(
      value(first, 'listsync_last_run_pages', { list: 'orders', job: 'pull' })!,
    );
    expect(value(first, 'listsync_reconcile_healed_total', { list: 'orders', kind: 'deleted' })).toBe(5);
    expect(value(first, 'listsync_reconcile_healed_total', { list: 'orders', kind: 'undeleted' })).toBe(0);
    expect(value(first, 'listsync_consecutive_failed_runs', { list: 'orders', job: 'pull' })).toBe(0);
    const changedAt = value(first, 'listsync_last_pull_with_changes_timestamp_seconds', { list: 'orders' })!;
    expect(Math.abs(changedAt - Date.now() / 1000)).toBeLessThan(120);
    expect(value(first, 'listsync_lag_limit_seconds', { list: 'orders' })).toBe(3600);
    expect(value(first, 'listsync_request_budget_per_second')).toBe(50);
    expect(value(first, 'listsync_list_info', { list: 'orders', app_id: 'demo', list_id: 'orders', conflict_policy: 'remote-wins' })).toBe(
      1,
    );

    // A pull that finds nothing new: zero rows changed, and the last-change time stays.
    await pullList({ db: t.db, client, config, logger }, config.lists[0]!);
    const quiet = await scrape();
    expect(value(quiet, 'listsync_last_run_rows_changed', { list: 'orders', job: 'pull' })).toBe(0);
    expect(value(quiet, 'listsync_last_pull_with_changes_timestamp_seconds', { list: 'orders' })).toBe(changedAt);

    // Two pulls the platform fails count up; the next success resets the count.
    const noRetry = new PlatformClient({ config: { ...config.platform, retries: 0 }, logger });
    try {
      await emu.admin.setFaults({ errorRate: 1 });
      for (let i = 0; i < 2; i++) await pullList({ db: t.db, client: noRetry, config, logger }, config.lists[0]!).catch(() => undefined);
      const failing = await scrape();
      expect(value(failing, 'listsync_consecutive_failed_runs', { list: 'orders', job: 'pull' })).toBe(2);
      expect(value(failing, 'listsync_last_run_failed', { list: 'orders' })).toBe(1);
    } finally {
      await emu.admin.setFaults({ errorRate: null });
      await noRetry.close();
    }
    await pullList({ db: t.db, client, config, logger }, config.lists[0]!);
    expect(value(await scrape(), 'listsync_consecutive_failed_runs', { list: 'orders', job: 'pull' })).toBe(0);
  });

  it('/healthz is degraded when the lag passes serve.maxLagMinutes', async () => {
    const ok = (await (await fetch(`${serve.url}/healthz`)).json()) as { status: string };
    expect(ok.status).toBe('ok');
    await t
      .db('listsync.sync_runs')
      .where({ job: 'pull' })
      .update({ started_at: t.db.raw("started_at - interval '2 hours'") });
    const stale = (await (await fetch(`${serve.url}/healthz`)).json()) as { status: string; lists: { list: string; lagMinutes: number }[] };
    expect(stale.status).toBe('degraded');
    expect(stale.lists[0]!.lagMinutes).toBeGreaterThanOrEqual(120);
    const lag = value(await scrape(), 'listsync_lag_seconds', { list: 'orders' });
    expect(lag).toBeGreaterThanOrEqual(7200);
  });

  it('the parser is strict', () => {
    expect(() => parseExposition('x 1\n')).toThrow(/no TYPE/);
    expect(() => parseExposition('# TYPE x counter\nx{a="1} 1\n')).toThrow(/unterminated/);
    expect(() => parseExposition('# TYPE x counter\nx 1\nx 2\n')).toThrow(/duplicate series/);
    expect(() => parseExposition('# TYPE x gauge\nx one\n')).toThrow(/bad value/);
    expect(() => parseExposition('# TYPE x gauge\nx 1')).toThrow(/newline/);
  });
});
