/**
 * The shipped Grafana dashboard and Prometheus alert rules stay true to what
 * `serve` exposes: every PromQL expression parses (Prometheus's own lezer
 * grammar) and every metric name it reads is on a live serve's /metrics.
 * The deployment files (Dockerfile, compose, systemd, Kubernetes) agree with
 * listsync's defaults and with each other, as far as can be checked without
 * running them; test/package.test.ts carries out the Dockerfile's steps.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { commandHelps } from '../scripts/docs-commands.js';
import { parseConfig } from '../src/config.js';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { parseCopy, parseDockerfile, runCommands } from './helpers/dockerfile.js';
import { startWorld, type World } from './helpers/world.js';

const root = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));

/** The least config parseConfig accepts: its defaults are what the deployment files must agree with. */
const minimalConfig = () => ({ platform: { baseUrl: 'https://x.example/v1', apiKey: 'k-1234' }, database: { url: 'postgres://h/db' } });

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

describe('alert rule unit tests (deploy/prometheus/alerts.test.yml)', () => {
  interface RuleTest {
    alert_rule_test: { alertname: string; exp_alerts: unknown[] }[];
  }
  const unitTests = (parseYaml(readFileSync(root('deploy/prometheus/alerts.test.yml'), 'utf8')) as { tests: RuleTest[] }).tests;
  const checks = unitTests.flatMap((t) => t.alert_rule_test);

  it('show every alert firing on some series and quiet on others', () => {
    const firing = new Set(checks.filter((c) => c.exp_alerts.length > 0).map((c) => c.alertname));
    const quiet = new Set(checks.filter((c) => c.exp_alerts.length === 0).map((c) => c.alertname));
    const names = rules.map((r) => r.alert);
    expect(names.filter((n) => !firing.has(n))).toEqual([]);
    expect(names.filter((n) => !quiet.has(n))).toEqual([]);
    expect(checks.map((c) => c.alertname).filter((n) => !names.includes(n))).toEqual([]);
  });

  it('pass under promtool, where promtool is installed', () => {
    const which = spawnSync('promtool', ['--version']);
    if (which.error) return; // .ci/run installs it and runs "promtool test rules" itself
    const r = spawnSync('promtool', ['test', 'rules', root('deploy/prometheus/alerts.test.yml')], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it('are run by CI beside the syntax check', () => {
    const ci = readFileSync(root('.ci/run'), 'utf8');
    expect(ci).toContain('promtool check rules deploy/prometheus/alerts.yml');
    expect(ci).toContain('promtool test rules deploy/prometheus/alerts.test.yml');
  });
});

describe('the Dockerfile', () => {
  const stages = parseDockerfile();
  const image = stages.at(-1)!;
  const op = (name: string) => image.instructions.filter((i) => i.op === name).map((i) => i.args);

  it('copies only files that exist in the repository', () => {
    const copies = stages.flatMap((s) => s.instructions.filter((i) => i.op === 'COPY').map((i) => parseCopy(i.args)));
    const fromRepo = copies.filter((c) => !c.from).flatMap((c) => c.sources);
    expect(fromRepo.length).toBeGreaterThan(5);
    expect(fromRepo.filter((src) => !existsSync(root(src)))).toEqual([]);
    // Everything the package's "files" names is copied into the build stage.
    const pkg = JSON.parse(readFileSync(root('package.json'), 'utf8')) as { files: string[] };
    const sourcesFor = pkg.files.filter((f) => !f.startsWith('!') && !f.startsWith('dist')).filter((f) => !fromRepo.includes(f));
    expect(sourcesFor).toEqual([]);
    // The build context's exclusions leave every copied path in (and keep node_modules, .env and dist out).
    const ignored = readFileSync(root('deploy/Dockerfile.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.env']));
    expect(fromRepo.filter((src) => ignored.some((i) => src === i || src.startsWith(`${i}/`)))).toEqual([]);
  });

  it('builds in stages and runs `listsync serve` as a user other than root, with a health check on /healthz', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(op('USER')).toHaveLength(1);
    expect(op('USER')[0]).not.toMatch(/^(root|0)(:|$)/);
    expect(op('ENTRYPOINT').map((a) => JSON.parse(a) as string[])).toEqual([['listsync']]);
    expect(op('CMD').map((a) => JSON.parse(a) as string[])).toEqual([['serve']]);
    const port = parseConfig(minimalConfig()).serve.port;
    expect(op('HEALTHCHECK')).toHaveLength(1);
    expect(op('HEALTHCHECK')[0]).toContain(`http://127.0.0.1:${port}/healthz`);
    expect(op('EXPOSE')).toEqual([String(port)]);
  });

  it('has the build steps test/package.test.ts carries out: npm ci, npm pack, an install without dev or optional dependencies', () => {
    expect(runCommands(stages)).toEqual([
      'npm ci --no-audit --no-fund --ignore-scripts --omit=optional',
      'mkdir /pkg && npm pack --pack-destination /pkg',
      'npm install --omit=dev --omit=optional --no-audit --no-fund /pkg/listsync-*.tgz',
    ]);
    const known = new Set(['WORKDIR', 'ENV', 'COPY', 'RUN', 'USER', 'EXPOSE', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD']);
    expect(stages.flatMap((s) => s.instructions.map((i) => i.op)).filter((o) => !known.has(o))).toEqual([]);
  });
});

describe('compose, Prometheus and Grafana files', () => {
  interface Service {
    image?: string;
    build?: { context: string; dockerfile: string };
    command?: string[];
    volumes?: string[];
    depends_on?: Record<string, { condition: string }> | string[];
  }
  const deploy = (path: string) => root(`deploy/${path}`);
  const compose = parseYaml(readFileSync(deploy('compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
  const mounts = (s: Service) => (s.volumes ?? []).map((v) => v.split(':')).filter(([src]) => src!.startsWith('.'));
  const prometheus = parseYaml(readFileSync(deploy('prometheus/prometheus.yml'), 'utf8')) as {
    rule_files: string[];
    scrape_configs: { job_name: string; metrics_path: string; honor_labels: boolean; static_configs: { targets: string[] }[] }[];
  };

  it('run migrate, then serve, built from the Dockerfile, beside PostgreSQL, Prometheus and Grafana', () => {
    const { services } = compose;
    expect(Object.keys(services).sort()).toEqual(['grafana', 'listsync', 'migrate', 'postgres', 'prometheus']);
    const build = services.migrate!.build!;
    expect(existsSync(join(deploy(build.context), build.dockerfile))).toBe(true);
    expect(services.migrate!.command).toEqual(['migrate']);
    expect(services.listsync!.command).toEqual(['serve']);
    expect(services.listsync!.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    expect(services.listsync!.image).toBe(services.migrate!.image);
    expect(services.listsync!.build).toEqual(build);
  });

  it('mount files that exist, where the other files expect them', () => {
    const all = Object.values(compose.services).flatMap(mounts);
    // The operator's config is the one file not shipped (listsync init writes it).
    expect([...new Set(all.filter(([src]) => !existsSync(deploy(src!))).map(([src]) => src))]).toEqual(['./listsync.config.json']);
    const into = new Map(all.map(([src, dest]) => [src, dest]));
    // Prometheus loads the shipped alert rules from where they are mounted.
    expect(prometheus.rule_files).toEqual([into.get('./prometheus/alerts.yml')]);
    expect(into.get('./prometheus/prometheus.yml')).toBe('/etc/prometheus/prometheus.yml');
    // Grafana's dashboard provider reads the directory the shipped dashboard is mounted in.
    const provider = parseYaml(readFileSync(deploy('grafana/provisioning/dashboards/listsync.yml'), 'utf8')) as {
      providers: { options: { path: string } }[];
    };
    expect(into.get('./grafana/listsync.json')).toBe(`${provider.providers[0]!.options.path}/listsync.json`);
    expect(into.get('./grafana/provisioning')).toBe('/etc/grafana/provisioning');
    const datasources = parseYaml(readFileSync(deploy('grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as {
      datasources: { type: string; url: string }[];
    };
    expect(datasources.datasources.map((d) => [d.type, d.url])).toEqual([['prometheus', 'http://prometheus:9090']]);
  });

  it('scrape /metrics of the listsync service on serve.port, keeping its job label, as the job the rules name', () => {
    const port = parseConfig(minimalConfig()).serve.port;
    expect(prometheus.scrape_configs).toEqual([
      { job_name: 'listsync', metrics_path: '/metrics', honor_labels: true, static_configs: [{ targets: [`listsync:${port}`] }] },
    ]);
    expect(rules.find((r) => r.alert === 'ListsyncDown')!.expr).toContain(`job="listsync"`);
  });

  it('promtool reads the Prometheus config, where promtool is installed', () => {
    const which = spawnSync('promtool', ['--version']);
    if (which.error) return;
    const r = spawnSync('promtool', ['check', 'config', '--syntax-only', deploy('prometheus/prometheus.yml')], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });
});

describe('the systemd unit', () => {
  const unit = readFileSync(root('deploy/systemd/listsync.service'), 'utf8');
  const values = (key: string) => [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!);
  const config = parseConfig(minimalConfig());

  it('migrates, then runs serve as its own user, stops after serve has had its shutdown time, and does not restart on bad config', () => {
    expect(values('ExecStartPre')).toEqual(['/usr/local/bin/listsync migrate']);
    expect(values('ExecStart')).toEqual(['/usr/local/bin/listsync serve']);
    expect(values('User')).toEqual(['listsync']);
    expect(Number(values('TimeoutStopSec')[0])).toBeGreaterThan(config.serve.shutdownTimeoutMs / 1000);
    expect(values('KillSignal')).toEqual(['SIGTERM']);
    expect(values('RestartPreventExitStatus')).toEqual(['2']);
  });

  it('reads the config and the .env beside it from /etc/listsync', () => {
    expect(values('Environment')).toContain('LISTSYNC_CONFIG=/etc/listsync/listsync.config.json');
    expect(values('EnvironmentFile')).toEqual(['-/etc/listsync/.env']);
  });
});

describe('the Kubernetes example', () => {
  interface Container {
    name: string;
    args?: string[];
    command?: string[];
    ports?: { name: string; containerPort: number }[];
    readinessProbe?: { httpGet: { path: string; port: string } };
    livenessProbe?: unknown;
  }
  interface PodSpec {
    securityContext?: { runAsNonRoot?: boolean };
    terminationGracePeriodSeconds?: number;
    initContainers?: Container[];
    containers: Container[];
  }
  const docs = parseAllDocuments(readFileSync(root('deploy/kubernetes/listsync.yaml'), 'utf8')).map(
    (d) => d.toJS() as Record<string, unknown>,
  );
  const ofKind = (kind: string) => docs.find((d) => d.kind === kind) as Record<string, never>;
  const deployment = ofKind('Deployment') as unknown as { spec: { template: { spec: PodSpec } } };
  const cronJob = ofKind('CronJob') as unknown as {
    spec: { concurrencyPolicy: string; jobTemplate: { spec: { template: { spec: PodSpec } } } };
  };
  const configMap = ofKind('ConfigMap') as unknown as { data: Record<string, string> };

  it('carries a config listsync accepts once the secrets are in the environment', () => {
    const raw = JSON.parse(configMap.data['listsync.config.json']!) as unknown;
    expect(() => parseConfig(raw, { PLATFORM_API_KEY: 'k-1234', DATABASE_URL: 'postgres://h/db' })).not.toThrow();
  });

  it('runs serve as non-root after a migrate init container, ready on /readyz at serve.port', () => {
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.initContainers?.map((c) => c.args)).toEqual([['migrate']]);
    const [serve] = pod.containers;
    expect(serve!.args).toEqual(['serve']);
    const port = serve!.ports!.find((p) => p.name === serve!.readinessProbe!.httpGet.port);
    expect(port?.containerPort).toBe(parseConfig(minimalConfig()).serve.port);
    expect(serve!.readinessProbe!.httpGet.path).toBe('/readyz');
    expect(serve!.livenessProbe).toBeTruthy();
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(parseConfig(minimalConfig()).serve.shutdownTimeoutMs / 1000);
  });

  it('backfills from a CronJob, one at a time, with options backfill --help lists', () => {
    expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
    const pod = cronJob.spec.jobTemplate.spec.template.spec;
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    const line = pod.containers[0]!.command!.join(' ');
    expect(line).toContain('listsync backfill');
    const help = commandHelps().find((c) => c.name === 'listsync backfill')!.help;
    const options = line.slice(line.indexOf('listsync backfill')).match(/--[a-z-]+/g) ?? [];
    expect(options.length).toBeGreaterThanOrEqual(2);
    expect(options.filter((o) => !help.includes(o))).toEqual([]);
  });
});
