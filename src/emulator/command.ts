import { type Command, InvalidArgumentError } from 'commander';
import type { ActivitySettings } from './activity.js';
import type { FaultSettingsPatch } from './faults.js';
import { FIELD_META_ARRANGEMENTS, type FieldMetaArrangement, isFieldMetaArrangement } from './field-meta-forms.js';
import { type EmulatorOptions, type EmulatorSummary, type RunningEmulator, startEmulator } from './index.js';
import { PlatformZone } from './platform-time.js';
import { RATE_COUNT_POINTS, RATE_MODELS, type RateCountPoint, type RateModel, isRateCountPoint, isRateModel } from './rate-models.js';
import { SeedError } from './seed.js';
import { DEFAULT_API_KEY } from './build-store.js';

/** `listsync emulator`: runs the platform emulator until SIGINT/SIGTERM. */

export const DEFAULT_EMULATOR_PORT = 4010;

function invalid(message: string): InvalidArgumentError {
  const e = new InvalidArgumentError(message);
  e.exitCode = 2;
  return e;
}

function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw invalid(`expected a whole number from ${min} to ${max}`);
    return n;
  };
}

function nonNegative(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw invalid('expected a number >= 0');
  return n;
}

function fraction(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw invalid('expected a fraction from 0 to 1 (e.g. 0.05)');
  return n;
}

function timeZone(v: string): string {
  if (!PlatformZone.isValid(v)) throw invalid('expected an IANA time zone such as UTC or Europe/Berlin');
  return v;
}

function positive(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0) throw invalid('expected a number of requests per second > 0');
  return n;
}

function fieldMeta(v: string): FieldMetaArrangement {
  if (!isFieldMetaArrangement(v)) throw invalid(`expected one of ${FIELD_META_ARRANGEMENTS.join(', ')}`);
  return v;
}

function rateModel(v: string): RateModel {
  if (!isRateModel(v)) throw invalid(`expected one of ${RATE_MODELS.join(', ')}`);
  return v;
}

function rateCountPoint(v: string): RateCountPoint {
  if (!isRateCountPoint(v)) throw invalid(`expected one of ${RATE_COUNT_POINTS.join(', ')}`);
  return v;
}

/** A header value: printable ASCII, no spaces (a key with others could not be sent as the apiKey header). */
function apiKey(v: string): string {
  if (!/^[\x21-\x7e]{1,200}$/.test(v)) throw invalid('expected 1-200 printable characters without spaces');
  return v;
}

function calendarDay(v: string): string {
  const ms = Date.parse(`${v}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || !Number.isFinite(ms) || !new Date(ms).toISOString().startsWith(v))
    throw invalid('expected a date YYYY-MM-DD, e.g. 2026-01-15');
  return v;
}

/** Parses `appID/listID:edits=5,creates=1,deletes=1[,hooks=1][,user=<id>][,seed=<n>]`. */
export function parseActivitySpec(spec: string): ActivitySettings {
  const m = /^([^/:\s]+)\/([^/:\s]+)(?::(.*))?$/.exec(spec.trim());
  if (!m) throw invalid('expected appID/listID:edits=5,creates=1,deletes=1');
  const settings: ActivitySettings = { appID: m[1] as string, listID: m[2] as string };
  const parts = (m[3] ?? '').split(',').filter((p) => p.trim() !== '');
  if (parts.length === 0) settings.editsPerSecond = 1;
  for (const part of parts) {
    const [k, v = ''] = part.split('=').map((s) => s.trim()) as [string, string | undefined];
    const rate = (): number => {
      const n = Number(v);
      if (v === '' || !Number.isFinite(n) || n < 0) throw invalid(`${k}: expected a rate per second >= 0 (got "${v}")`);
      return n;
    };
    switch (k) {
      case 'edits':
        settings.editsPerSecond = rate();
        break;
      case 'creates':
        settings.createsPerSecond = rate();
        break;
      case 'deletes':
        settings.deletesPerSecond = rate();
        break;
      case 'hooks':
        settings.hookEvents = v === '' || v === '1' || v === 'true';
        break;
      case 'user':
        settings.userId = v;
        break;
      case 'seed':
        settings.seed = wholeNumber(0)(v);
        break;
      default:
        throw invalid(`unknown key "${k}"; use edits, creates, deletes, hooks, user, seed`);
    }
  }
  return settings;
}

interface RawOptions {
  port: number;
  host: string;
  seed?: string;
  sample?: boolean;
  items?: number;
  lists?: number;
  spanDays?: number;
  seedNumber?: number;
  timeZone?: string;
  latency?: number;
  jitter?: number;
  errorRate?: number;
  timeoutRate?: number;
  dropRate?: number;
  rateLimit?: number | boolean;
  rateModel?: RateModel;
  rateJitter?: number;
  rateCountAt?: RateCountPoint;
  idsAsNumbers?: boolean;
  activity?: ActivitySettings;
  fieldMeta?: FieldMetaArrangement;
  queryLag?: number;
  referenceDate?: string;
  apiKey?: string;
}

/** The startEmulator options a command line asks for. */
export function emulatorOptionsFromCli(o: RawOptions): EmulatorOptions {
  const faults: FaultSettingsPatch = {};
  if (o.latency !== undefined) faults.latencyMs = o.latency;
  if (o.jitter !== undefined) faults.jitterMs = o.jitter;
  if (o.errorRate !== undefined) faults.errorRate = o.errorRate;
  if (o.timeoutRate !== undefined) faults.timeoutRate = o.timeoutRate;
  if (o.dropRate !== undefined) faults.dropRate = o.dropRate;
  const opts: EmulatorOptions = { port: o.port, host: o.host, faults, idsAsNumbers: o.idsAsNumbers === true };
  if (o.seed !== undefined) opts.seedFile = o.seed;
  opts.sample = o.sample === true || o.seed === undefined;
  if (o.items !== undefined) opts.items = o.items;
  if (o.lists !== undefined) {
    opts.lists = o.lists;
    opts.sample = o.sample === true;
  }
  if (o.spanDays !== undefined) opts.spanDays = o.spanDays;
  if (o.seedNumber !== undefined) opts.seedNumber = o.seedNumber;
  if (o.timeZone !== undefined) opts.timeZone = o.timeZone;
  if (o.rateLimit === false) opts.rateLimit = false;
  else if (typeof o.rateLimit === 'number') opts.rateLimit = { burst: Math.max(1, Math.round(o.rateLimit)), perSecond: o.rateLimit };
  if (o.rateModel !== undefined) opts.rateModel = o.rateModel;
  if (o.rateJitter !== undefined) opts.rateJitterMs = o.rateJitter;
  if (o.rateCountAt !== undefined) opts.rateCountAt = o.rateCountAt;
  if (o.activity !== undefined) opts.activity = o.activity;
  if (o.fieldMeta !== undefined) opts.fieldMeta = o.fieldMeta;
  if (o.queryLag !== undefined) opts.queryLagMs = o.queryLag;
  if (o.referenceDate !== undefined) opts.referenceDate = o.referenceDate;
  if (o.apiKey !== undefined) opts.apiKeys = [o.apiKey];
  return opts;
}

/** Resolves with the signal's name on SIGINT or SIGTERM. */
export function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

export interface EmulatorCommandDeps {
  /** Resolves when the emulator should stop (default: SIGINT or SIGTERM); gets the running emulator. */
  waitForStop?: (emu: RunningEmulator) => Promise<string>;
}

export function registerEmulatorCommand(program: Command, deps: EmulatorCommandDeps = {}): void {
  const waitForStop = deps.waitForStop ?? (() => waitForSignal());
  program
    .command('emulator')
    .description(
      'run the local platform emulator: the /v1 API with sample or seeded lists, faults and simulated activity, plus an admin API under /_admin',
    )
    .option('--port <n>', 'HTTP port (0 picks a free one)', wholeNumber(0, 65535), DEFAULT_EMULATOR_PORT)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--seed <file>', 'JSON seed file with users and lists')
    .option('--sample', 'include the built-in sample list demo/orders (the default without --seed)')
    .option('--items <n>', 'items in the sample list (default 5000), or in each of --lists (default 1000)', wholeNumber(0, 10_000_000))
    .option(
      '--lists <n>',
      'generate this many lists bench/l001, bench/l002... of --items items each (the sample list only with --sample)',
      wholeNumber(1, 10_000),
    )
    .option(
      '--span-days <n>',
      'days before the reference date that generated Created dates spread over (default 400)',
      wholeNumber(1, 36_500),
    )
    .option('--seed-number <n>', 'seed of the generated data (same number, same data)', wholeNumber(0))
    .option('--time-zone <tz>', 'platform time zone of Created/Modified (default UTC)', timeZone)
    .option('--latency <ms>', 'latency added to every /v1 request', nonNegative)
    .option('--jitter <ms>', 'random extra latency up to this many ms', nonNegative)
    .option('--error-rate <r>', 'fraction of /v1 requests answered 500/502/503', fraction)
    .option('--timeout-rate <r>', 'fraction of /v1 requests held and then cut without an answer', fraction)
    .option('--drop-rate <r>', 'fraction of /v1 connections dropped right after the request', fraction)
    .option('--rate-limit <perSecond>', 'requests per second per API key (default 10, burst the same)', positive)
    .option('--no-rate-limit', 'turn the rate limit off')
    .option(
      '--rate-model <model>',
      `how the limit is kept: ${RATE_MODELS.join('|')} (default sliding: at most the limit in any sliding second, the strictest)`,
      rateModel,
    )
    .option(
      '--rate-jitter <ms>',
      'each request is counted by the limit after a random delay of up to this many ms (default 20)',
      nonNegative,
    )
    .option(
      '--rate-count-at <when>',
      `when the limit counts a request: ${RATE_COUNT_POINTS.join('|')} (default handler: after --latency/--jitter and part of --rate-jitter, answered right after; hidden, the strictest: the answer's timing does not show when)`,
      rateCountPoint,
    )
    .option('--ids-as-numbers', 'write ListDataID as a bare JSON number (tests lossless parsing)')
    .option('--activity <spec>', 'simulate another user, e.g. demo/orders:edits=5,creates=1,deletes=1,hooks=1', parseActivitySpec)
    .option(
      '--field-meta <shape>',
      `how GET .../fields names storage kind and control: ${FIELD_META_ARRANGEMENTS.join('|')} (default exported; control-only is the likeliest real shape)`,
      fieldMeta,
    )
    .option(
      '--query-lag <ms>',
      'a write shows in items/query only this many ms later (reads by ID show it at once)',
      wholeNumber(0, 600_000),
    )
    .option(
      '--api-key <key>',
      `the one API key /v1 accepts (default ${DEFAULT_API_KEY}); another key is refused with 401, as a platform refuses a wrong one`,
      apiKey,
    )
    .option('--reference-date <YYYY-MM-DD>', 'day the generated data is anchored to (default today, UTC): same day, same data', calendarDay)
    .action(async (raw: RawOptions, cmd: Command) => {
      const output = cmd.configureOutput();
      const out = (s: string): void => (output.writeOut ?? ((x: string) => process.stdout.write(x)))(`${s}\n`);
      let emu: RunningEmulator;
      try {
        emu = await startEmulator(emulatorOptionsFromCli(raw));
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code === 'EADDRINUSE')
          cmd.error(`listsync emulator: port ${raw.port} is in use; pick another with --port <n> (0 = any free port)`, {
            exitCode: 1,
            code: 'listsync.emulator.portInUse',
          });
        const bad = e instanceof SeedError || e instanceof RangeError;
        cmd.error(`listsync emulator: ${err.message}`, { exitCode: bad ? 2 : 1, code: 'listsync.emulator.startFailed' });
        return;
      }
      const opts = emulatorOptionsFromCli(raw);
      const summary = emu.summary();
      const first = summary.lists[0];
      const list = first === undefined ? '{appID}/{listID}' : `${encodeURIComponent(first.appID)}/${encodeURIComponent(first.listID)}`;
      out('listsync emulator listening');
      out(`  API base URL  ${emu.baseUrl}`);
      out(`  API key       ${emu.apiKey}   (send it in the "apiKey" header)`);
      out(`  admin API     ${emu.url}/_admin   (health: ${emu.url}/healthz)`);
      for (const line of bannerDetails(summary)) out(line);
      out(
        `  try: curl -s -X POST -H 'apiKey: ${emu.apiKey}' -H 'Content-Type: application/json' -d '{"PageSize":2}' ${emu.baseUrl}/lists/${list}/items/query`,
      );
      if (opts.sample === false && summary.lists.length === 0) out('  (no lists: the seed defines none and --sample was not given)');
      out('Press Ctrl+C to stop.');
      const signal = await waitForStop(emu);
      out(`${signal}: stopping the emulator`);
      await emu.close();
    });
}

/** The banner's description of what is served: time zone, reference date, settings, lists. */
export function bannerDetails(summary: EmulatorSummary): string[] {
  const { settings } = summary;
  const lines = [
    `  time zone     ${summary.timeZone}   (Created/Modified and date-times are in this zone, without offset)`,
    `  data as of    ${summary.referenceDate}   (pin with --reference-date)`,
    `  field meta    ${settings.fieldMeta}${settings.fieldFlags === 'boolean' ? '' : `, flags as ${settings.fieldFlags}s`}   query lag ${settings.queryLagMs} ms`,
    `  users         ${summary.users}`,
    `  lists         ${summary.lists.length === 0 ? 'none' : String(summary.lists.length)}`,
  ];
  const width = Math.max(0, ...summary.lists.map((l) => `${l.appID}/${l.listID}`.length));
  for (const l of summary.lists) {
    const items = `${l.count} ${l.count === 1 ? 'item' : 'items'}`;
    lines.push(`    ${`${l.appID}/${l.listID}`.padEnd(width)}  appID=${l.appID} listID=${l.listID}  ${items}  "${l.title}"`);
  }
  return lines;
}
