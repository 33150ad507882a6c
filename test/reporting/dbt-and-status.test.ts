/**
 * What tools outside listsync read: `export dbt-sources`, `status`'s schema
 * changes and `/metrics`' count of them, through the real binary and a real
 * Postgres after pulls from the emulator over HTTP.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../src/metrics.js';
import { cronIntervalMinutes } from '../../src/commands/export.js';
import { pullList } from '../../src/sync/pull.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

interface Sources {
  version: number;
  sources: {
    name: string;
    schema: string;
    tables: {
      name: string;
      description: string;
      loaded_at_field: string;
      freshness: { warn_after?: { count: number; period: string }; error_after: { count: number; period: string } };
      columns: { name: string; description: string; data_tests?: string[] }[];
    }[];
  }[];
}

let w: World;
beforeAll(async () => {
  w = await startWorld({
    emulator: { items: 40 },
    lists: [
      { name: 'orders', appID: 'demo', listID: 'orders', schedule: '*/15 * * * *' },
      { name: 'orders_copy', appID: 'demo', listID: 'orders', table: 'orders_copy' },
    ],
  });
  for (const l of w.config.lists) await pullList(w.deps(), l);
  await w.emu.admin.addField('demo', 'orders', { FieldName: 'Region', DisplayName: 'Region', Type: 'input', FieldType: 'Text' });
  await pullList(w.deps(), w.config.lists[0]!);
});
afterAll(async () => w?.close());

const env = () => ({ PLATFORM_API_KEY: w.emu.apiKey });

describe('export dbt-sources', () => {
  it('writes dbt sources YAML whose columns per list match information_schema.columns', async () => {
    const r = await runCli(['--config', w.configFile, 'export', 'dbt-sources'], { env: env(), cwd: w.cwd });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = parse(r.stdout) as Sources;
    expect(doc.version).toBe(2);
    expect(doc.sources).toHaveLength(1);
    expect(doc.sources[0]).toMatchObject({ name: 'listsync', schema: 'mirror' });
    expect(doc.sources[0]!.tables.map((t) => t.name)).toEqual(['orders', 'orders_copy']);
    for (const table of doc.sources[0]!.tables) {
      const cols = (await w.t
        .db('information_schema.columns')
        .where({ table_schema: 'mirror', table_name: table.name })
        .orderBy('ordinal_position')
        .pluck('column_name')) as string[];
      expect(table.columns.map((c) => c.name)).toEqual(cols);
      expect(table.columns.every((c) => c.description.length > 0)).toBe(true);
      expect(table.columns.find((c) => c.name === 'id')!.data_tests).toEqual(['unique', 'not_null']);
      expect(table.loaded_at_field).toBe('_synced_at');
      expect(table.description).toMatch(/listsync mirror of list/);
      expect(table.freshness.error_after).toEqual({ count: 1, period: 'day' });
    }
    const orders = doc.sources[0]!.tables[0]!;
    expect(orders.columns.map((c) => c.name)).toContain('region');
    expect(orders.freshness.warn_after).toEqual({ count: 30, period: 'minute' });
    expect(doc.sources[0]!.tables[1]!.freshness.warn_after).toBeUndefined();
  });

  it('--out writes the file; a list never pulled is left out and named on stderr', async () => {
    const raw = JSON.parse(readFileSync(w.configFile, 'utf8')) as { lists: unknown[] };
    const file = join(w.cwd, 'more.config.json');
    writeFileSync(file, JSON.stringify({ ...raw, lists: [...raw.lists, { name: 'never', appID: 'demo', listID: 'orders' }] }));
    const out = join(w.cwd, 'sources.yml');
    const r = await runCli(['--config', file, 'export', 'dbt-sources', '--out', out], { env: env(), cwd: w.cwd });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('list "never" has no mirror table yet');
    const doc = parse(readFileSync(out, 'utf8')) as Sources;
    expect(doc.sources[0]!.tables.map((t) => t.name)).toEqual(['orders', 'orders_copy']);
  });

  it('reads intervals from cron expressions', () => {
    expect(cronIntervalMinutes('*/10 * * * *')).toBe(10);
    expect(cronIntervalMinutes('0 */2 * * *')).toBe(120);
    expect(cronIntervalMinutes('0 3 * * *')).toBe(1440);
  });
});

describe('schema changes in status and /metrics', () => {
  it('status prints the latest changes; /metrics counts them by list and kind', async () => {
    const r = await runCli(['--config', w.configFile, 'status'], { env: env(), cwd: w.cwd });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('schema changes');
    expect(r.stdout).toMatch(/orders\s+added\s+Region\s+region/);

    const metrics = createMetrics({ db: w.t.db, config: w.config, defaultMetrics: false });
    const text = await metrics.registry.metrics();
    expect(text).toContain('listsync_schema_changes_total{list="orders",kind="added"} 1');
    expect(text).toContain('listsync_schema_changes_total{list="orders",kind="table-created"} 1');
    expect(text).toContain('listsync_schema_changes_total{list="orders_copy",kind="table-created"} 1');
  });
});
