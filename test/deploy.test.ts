/**
 * The shipped Grafana dashboard and Prometheus alert rules stay true to what
 * `serve` exposes: every PromQL expression parses (Prometheus's own lezer
 * grammar) and every metric name it reads is on a live serve's /metrics.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

const root = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Target {
  expr: string;
}
interface Panel {
  title: string;
  type: string;
  targets?: Target[];
  datasource?: { uid: string };
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown; definition?: string }[] };
}

const rules = (parseYaml(readFileSync(root('deploy/prometheus/alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);
const dashboard = JSON.parse(readFileSync(root('deploy/grafana/listsync.json'), 'utf8')) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

/** Every expression with where it comes from. */
const expressions: [string, string][] = [
  ...rules.map((r): [string, string] => [`alert ${r.alert}`, r.expr]),
  ...panels.flatMap((p) => (p.targets ?? []).map((t): [string, string] => [`panel "${p.title}"`, t.expr])),
];

/** Grafana's variables replaced by values PromQL takes: intervals by a duration, the rest by a regex. */
function substituteVariables(expr: string): string {
  return expr.replace(/\$\{?(\w+)\}?/g, (_, name: string) => (name.startsWith('__') ? '5m' : '.*'));
}

/** Parses with the PromQL grammar; returns the error positions and the metric names of its selectors. */
function analyse(expr: string): { errors: number[]; metrics: string[] } {
  const errors: number[] = [];
  const metrics: string[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') metrics.push(expr.slice(node.from, node.to));
    },
  });
  return { errors, metrics };
}

/** Names /metrics exposes: sample names, and every family's name with the suffixes its type has. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      names.add(type[1]!);
      if (type[2] === 'histogram' || type[2] === 'summary') for (const s of ['_bucket', '_sum', '_count']) names.add(type[1]! + s);
    } else if (line && !line.startsWith('#')) names.add(/^[^{ ]+/.exec(line)![0]);
  }
  return names;
}

describe('the PromQL checks themselves', () => {
  it('find errors and metric names', () => {
    expect(analyse('sum by (list) (rate(a_total{list=~".*"}[5m])) > on (list) b').errors).toEqual([]);
    expect(analyse('sum by (list) (rate(a_total{list=~".*"}[5m])) > on (list) b').metrics).toEqual(['a_total', 'b']);
    expect(analyse('sum(rate(a[5m]) >').errors.length).toBeGreaterThan(0);
    expect(analyse('rate(x[$__rate_interval])').errors.length).toBeGreaterThan(0);
    expect(substituteVariables('rate(x{list=~"$list"}[$__rate_interval])')).toBe('rate(x{list=~".*"}[5m])');
  });
});

describe('alert rules and dashboard', () => {
  it('every alert has a for clause, a severity, a summary and a description saying what to do', () => {
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const r of rules) {
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(r.labels?.severity, r.alert).toMatch(/^(critical|warning)$/);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description?.length ?? 0, r.alert).toBeGreaterThan(60);
    }
    for (const name of [
      'ListsyncDown',
      'ListsyncListStale',
      'ListsyncRunsFailing',
      'ListsyncNoChangesForADay',
      'ListsyncChangesFailed',
      'ListsyncConflictsWaiting',
      'ListsyncRequestBudgetSaturated',
    ]) {
      expect(rules.map((r) => r.alert)).toContain(name);
    }
  });

  it('the dashboard is importable: a Prometheus datasource variable, a list variable, panels on them', () => {
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get('datasource')?.type).toBe('datasource');
    expect(vars.get('list')?.definition).toBe('label_values(listsync_list_info, list)');
    const withQueries = panels.filter((p) => p.type !== 'row');
    expect(withQueries.length).toBeGreaterThanOrEqual(20);
    for (const p of withQueries) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
    // Per list panels follow the list variable.
    const perList = expressions.filter(([, e]) => /\blist\b/.test(e) && e.includes('{') && !e.includes('listsync_list_info'));
    for (const [where, e] of perList.filter(([w]) => w.startsWith('panel'))) expect(e, where).toContain('list=~"$list"');
  });

  it('every expression parses as PromQL', () => {
    const bad = expressions
      .map(([where, e]) => ({ where, e, errors: analyse(substituteVariables(e)).errors }))
      .filter((x) => x.errors.length);
    expect(bad).toEqual([]);
  });
});

describe('against a live serve', () => {
  let w: World;
  let metricsText = '';
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 50 } });
    const env = { PLATFORM_API_KEY: w.emu.apiKey };
    expect((await runCli(['--config', w.configFile, 'pull'], { env })).code).toBe(0);
    expect((await runCli(['--config', w.configFile, 'reconcile'], { env })).code).toBe(0);
    const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'serve', '--port', '0'], {
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /listsync serve on (http:\/\/\S+?) /.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      metricsText = await res.text();
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  it('every metric the rules and the dashboard read is on /metrics (up is what Prometheus adds per target)', () => {
    const exposed = exposedNames(metricsText);
    const used = new Set([...expressions.flatMap(([, e]) => analyse(substituteVariables(e)).metrics), 'listsync_list_info']);
    const missing = [...used].filter((m) => !exposed.has(m));
    expect(missing).toEqual(['up']);
    expect(rules.filter((r) => /\bup\b/.test(r.expr)).map((r) => r.expr)).toEqual(['up{job="listsync"} == 0']);
    // The values behind the per-list panels are there for the configured list after a pull and a reconcile.
    for (const series of [
      'listsync_lag_seconds{list="orders"}',
      'listsync_last_run_rows_changed{list="orders",job="pull"} 50',
      'listsync_lag_limit_seconds{list="orders"}',
    ]) {
      expect(metricsText).toContain(series);
    }
  });

  it('promtool accepts the rules and the live exposition, where promtool is installed', () => {
    const which = spawnSync('promtool', ['--version']);
    if (which.error) return; // .ci/run installs it and runs "promtool check rules" itself
    const rulesCheck = spawnSync('promtool', ['check', 'rules', root('deploy/prometheus/alerts.yml')], { encoding: 'utf8' });
    expect(rulesCheck.status, rulesCheck.stdout + rulesCheck.stderr).toBe(0);
    // promtool's lint flags three of prom-client's default Node metrics (gauges whose names end in _total);
    // listsync's own metrics must draw no complaint.
    const metricsCheck = spawnSync('promtool', ['check', 'metrics'], { input: metricsText, encoding: 'utf8' });
    const complaints = `${metricsCheck.stdout}${metricsCheck.stderr}`.split('\n').filter(Boolean);
    const promClientDefaults = [
      'listsync_nodejs_active_handles_total',
      'listsync_nodejs_active_requests_total',
      'listsync_nodejs_active_resources_total',
    ];
    expect(complaints.filter((c) => !promClientDefaults.some((name) => c.startsWith(`${name} `)))).toEqual([]);
  });
});
