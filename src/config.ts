/**
 * The one place that reads the environment and the config file.
 *
 * Config comes from one JSON file (`listsync.config.json`, or the path in
 * `LISTSYNC_CONFIG`) plus environment variables for secrets. A string value of
 * the form `${NAME}` in the file is replaced by the environment variable NAME;
 * `platform.apiKey` and `database.url` default to `PLATFORM_API_KEY` and
 * `DATABASE_URL`. Keys starting with `//` are comments and ignored. A `.env` file beside the config file and one in the
 * working directory are read too (beside the config wins; neither overrides variables already set). The result is validated once and frozen.
 *
 * What the file may hold is config-schema.ts's (re-exported here, with the
 * schedules of config-schedules.ts); this module reads the file and the
 * environment, substitutes, validates with a message naming the key (and
 * the nearest valid one for an unknown key), and keeps secrets out of both.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { type Config, configSchema, formatPath, keysAt } from './config-schema.js';
import { ConfigError, coerceError } from './errors.js';
import { passwordOf, registerSecrets, scrubSecrets } from './secrets.js';

export {
  DEFAULT_ACCOUNT,
  DEFAULT_CONSOLE_ADDRESS,
  DEFAULT_MAX_CONCURRENT_JOBS,
  DEFAULT_PAGE_WRITERS,
  configKeyPaths,
  consoleListen,
  isConsoleAddress,
  pinnedNames,
  pinnedTypes,
  type AccountConfig,
  type Config,
  type ConflictPolicy,
  type ListConfig,
  type PlatformConfig,
} from './config-schema.js';
export {
  FULL_RECONCILE_SCHEDULE,
  REALTIME_PULL_SCHEDULE,
  fieldsMaxAgeMs,
  fullReconcileSchedule,
  pullSchedule,
} from './config-schedules.js';

export const DEFAULT_CONFIG_FILE = 'listsync.config.json';

/** Keys whose values are never printed. */
const SECRET_KEYS = new Set(['apiKey', 'url', 'password', 'consoleToken']);

export interface LoadOptions {
  /** Config file path; default `LISTSYNC_CONFIG` or `./listsync.config.json`. */
  path?: string;
  /** Environment; default `process.env` over the `.env` beside the config file over `./.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
}

/** Reads, interpolates and validates the config. Throws ConfigError naming the key. */
export function loadConfig(options: LoadOptions = {}): Config {
  const cwd = options.cwd ?? process.cwd();
  const path = resolve(cwd, options.path ?? (options.env ?? readEnvironment(cwd)).LISTSYNC_CONFIG ?? DEFAULT_CONFIG_FILE);
  const env = options.env ?? readEnvironment(cwd, dirname(path));
  if (!existsSync(path)) {
    throw new ConfigError(`No config file at ${path}. Run "listsync init" to write one, or point LISTSYNC_CONFIG at yours.`, '(file)');
  }
  registerSecrets([env.PLATFORM_API_KEY, passwordOf(env.DATABASE_URL), env.LISTSYNC_CONSOLE_TOKEN]);
  return parseConfig(readConfigJson(path), env, path);
}

/** The config file's JSON; a syntax error names its line and column (`line 30, column 5`). */
export function readConfigJson(path: string): unknown {
  const text = readFileSync(path, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    // V8 quotes a piece of the text, which may hold a secret: keep only the position, as a line and column.
    const reason = coerceError(err)
      .message.replace(/,?\s*"[^]*" is not valid JSON/, ' (not valid JSON)')
      .replace(/ at position (\d+)(?: \(line \d+ column \d+\))?/, (_m, at: string) => ` at ${lineAndColumn(text, Number(at))}`);
    throw new ConfigError(`${path} is not valid JSON: ${reason}. Fix the file (JSON allows no comments or trailing commas).`, '(file)');
  }
}

/** `line 3, column 1` (both 1-based) of a position in `text`. */
export function lineAndColumn(text: string, position: number): string {
  const before = text.slice(0, position).split('\n');
  return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

/**
 * Where settings can come from, for `listsync config show`: the config file's path and JSON, and the
 * environment's layers from the weakest to the strongest (what readEnvironment merges).
 */
export function configLayers(options: { path?: string; cwd?: string } = {}): {
  path: string;
  file: unknown;
  env: { source: string; values: Readonly<Record<string, string | undefined>> }[];
} {
  const cwd = options.cwd ?? process.cwd();
  const path = resolve(cwd, options.path ?? readEnvironment(cwd).LISTSYNC_CONFIG ?? DEFAULT_CONFIG_FILE);
  const dirs = [...new Set([resolve(cwd), resolve(dirname(path))])];
  const env = dirs.map((dir) => {
    const file = resolve(dir, '.env');
    const where = dir === resolve(cwd) ? 'in the working directory' : 'beside the config file';
    return { source: `.env ${where} (${file})`, values: existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {} };
  });
  env.push({ source: 'environment', values: process.env });
  return { path, file: existsSync(path) ? readConfigJson(path) : undefined, env };
}

/** The environment variables listsync reads in place of a missing key (applyEnvironment); `log.level`'s wins over the file. */
export const KEYS_FROM_ENVIRONMENT: Readonly<Record<string, string>> = {
  'platform.apiKey': 'PLATFORM_API_KEY',
  'platform.baseUrl': 'PLATFORM_BASE_URL',
  'database.url': 'DATABASE_URL',
  'serve.consoleToken': 'LISTSYNC_CONSOLE_TOKEN',
  'log.level': 'LISTSYNC_LOG_LEVEL',
};

/** A config value as `config show` prints it: secret keys masked (a database URL keeps all but its password). */
export function shownValue(key: string, value: unknown): string {
  const last = key.split('.').at(-1) ?? key;
  const masked = maskSecretKeys(value, last);
  return typeof masked === 'string' ? masked : (JSON.stringify(masked) ?? String(masked));
}

/** Validates an already-parsed config object; `source` names it in messages. */
export function parseConfig(raw: unknown, env: Readonly<Record<string, string | undefined>> = {}, source = 'config'): Config {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`${source} must hold a JSON object with "platform", "database" and "lists".`, '(root)');
  }
  const withEnv = applyEnvironment(interpolate(asWritten(raw), env, []), env);
  const secrets = [...secretValuesIn(withEnv), env.PLATFORM_API_KEY, passwordOf(env.DATABASE_URL)].filter(
    (s): s is string => typeof s === 'string' && s.length >= 4,
  );
  registerSecrets(secrets);
  const result = configSchema.safeParse(withEnv);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') {
      const key = formatPath(issue.path);
      throw new ConfigError(scrubSecrets(unknownKeyMessage(key, issue.keys, keysAt(configSchema, issue.path), source), secrets), key);
    }
    const key = formatPath(issue.path);
    const value = valueAt(withEnv, issue.path);
    const shown = value === undefined ? 'missing' : `got ${describeValue(value, isSecretPath(issue.path))}`;
    throw new ConfigError(scrubSecrets(`Config key ${key}: ${issue.message} (${shown}) in ${source}.${hintFor(key)}`, secrets), key);
  }
  return deepFreeze(result.data) as Config;
}

/** `Config key platform: unknown key "requestPerSecond" — did you mean "requestsPerSecond"? Valid keys: ...` */
function unknownKeyMessage(key: string, unknown: readonly string[], valid: readonly string[], source: string): string {
  const parts = unknown.map((k) => {
    const near = closest(k, valid);
    return `unknown key ${JSON.stringify(k)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}`;
  });
  const where = key === '(root)' ? 'the top level' : key;
  return `Config key ${key}: ${parts.join(', ')} in ${source}. Valid keys of ${where}: ${valid.join(', ')}.`;
}

/** The valid key most like `word` (case-insensitive edit distance at most a third of its length, at least 2). */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** Secret values of an unvalidated config: every string under a secret key, and a database URL's password. */
function secretValuesIn(value: unknown, key = ''): string[] {
  // A URL's secret is its password; the rest of it (host, database) is what messages must name.
  if (typeof value === 'string')
    return !SECRET_KEYS.has(key) ? [] : /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? [passwordOf(value) ?? ''].filter(Boolean) : [value];
  if (Array.isArray(value)) return value.flatMap((v) => secretValuesIn(v));
  if (isObject(value)) return Object.entries(value).flatMap(([k, v]) => secretValuesIn(v, k));
  return [];
}

/** A copy with the values of secret keys masked (database URLs keep everything but the password). */
function maskSecretKeys(value: unknown, key = ''): unknown {
  if (typeof value === 'string' && SECRET_KEYS.has(key)) return /^postgres(ql)?:\/\//.test(value) ? redactUrl(value) : '***';
  if (Array.isArray(value)) return value.map((v) => maskSecretKeys(v));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecretKeys(v, k)]));
  return value;
}

/**
 * The real environment over the `.env` in `configDir` (beside the config file: what cron and
 * systemd, which start elsewhere, find) over the `.env` in the working directory.
 */
export function readEnvironment(cwd = process.cwd(), configDir?: string): Record<string, string | undefined> {
  const dirs = configDir && resolve(configDir) !== resolve(cwd) ? [cwd, configDir] : [cwd];
  const fromFiles = dirs.map((dir) => {
    const file = resolve(dir, '.env');
    return existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
  });
  return Object.assign({}, ...fromFiles, process.env) as Record<string, string | undefined>;
}

/** Runtime settings that are not part of the config file. */
export interface RuntimeEnv {
  logLevel?: string;
  isTTY: boolean;
  isCI: boolean;
  databaseUrl?: string;
}
export function runtimeEnv(env: Readonly<Record<string, string | undefined>> = readEnvironment()): RuntimeEnv {
  return {
    logLevel: env.LISTSYNC_LOG_LEVEL ?? env.LOG_LEVEL,
    isTTY: Boolean(process.stdout.isTTY) && !env.CI,
    isCI: Boolean(env.CI),
    databaseUrl: env.DATABASE_URL,
  };
}

/** Database URL with any password replaced, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const k of [...u.searchParams.keys()]) if (/pass|key|secret|token/i.test(k)) u.searchParams.set(k, '***');
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
  }
}

/** Every secret value in the config, for log and error redaction. */
export function secretsOf(config: Config): string[] {
  const keys = config.accounts.map((a) => a.platform.apiKey);
  return [...keys, passwordOf(config.database.url) ?? '', config.serve.consoleToken ?? ''].filter((s) => s.length >= 4);
}

function interpolate(value: unknown, env: Readonly<Record<string, string | undefined>>, path: (string | number)[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const v = env[name];
      if (v === undefined) {
        throw new ConfigError(
          `Config key ${formatPath(path)} refers to environment variable ${name}, which is not set. Set it (or put it in .env).`,
          formatPath(path),
        );
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, [...path, i]));
  if (value && typeof value === 'object') {
    // Keys starting with "//" are comments (JSON has no other kind).
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !k.startsWith('//'))
        .map(([k, v]) => [k, interpolate(v, env, [...path, k])]),
    );
  }
  return value;
}

function applyEnvironment(raw: unknown, env: Readonly<Record<string, string | undefined>>): unknown {
  const cfg = { ...(raw as Record<string, unknown>) };
  // The environment fills the single-account form only: each of `accounts` names its own key (`${ACME_API_KEY}`).
  if (cfg.accounts === undefined) {
    const platform = isObject(cfg.platform) ? { ...cfg.platform } : cfg.platform === undefined ? {} : cfg.platform;
    if (isObject(platform) && platform.apiKey === undefined && env.PLATFORM_API_KEY) platform.apiKey = env.PLATFORM_API_KEY;
    if (isObject(platform) && platform.baseUrl === undefined && env.PLATFORM_BASE_URL) platform.baseUrl = env.PLATFORM_BASE_URL;
    cfg.platform = platform;
  }
  const database = isObject(cfg.database) ? { ...cfg.database } : cfg.database === undefined ? {} : cfg.database;
  if (isObject(database) && database.url === undefined && env.DATABASE_URL) database.url = env.DATABASE_URL;
  cfg.database = database;
  const serve = isObject(cfg.serve) ? { ...cfg.serve } : cfg.serve === undefined ? {} : cfg.serve;
  if (isObject(serve) && serve.consoleToken === undefined && env.LISTSYNC_CONSOLE_TOKEN) serve.consoleToken = env.LISTSYNC_CONSOLE_TOKEN;
  if (isObject(serve) && Object.keys(serve).length > 0) cfg.serve = serve;
  const level = env.LISTSYNC_LOG_LEVEL;
  if (level) cfg.log = { ...(isObject(cfg.log) ? cfg.log : {}), level };
  return cfg;
}

/**
 * A config listsync already parsed, given again with a key changed (a tool, a test): back to the form
 * it was written in. Parsing adds `accounts` (each with its `keyPrefix`) beside `platform` and `lists`;
 * the single form drops them again, the accounts form drops the top-level copies.
 */
function asWritten(raw: object): object {
  const accounts = (raw as { accounts?: unknown }).accounts;
  if (!Array.isArray(accounts) || !accounts.every((a) => isObject(a) && typeof a.keyPrefix === 'string')) return raw;
  const placed = accounts as { keyPrefix: string }[];
  if (placed.length === 1 && placed[0]!.keyPrefix === '') {
    const { accounts: _accounts, ...single } = raw as Record<string, unknown>;
    return single;
  }
  const { platform: _platform, lists: _lists, ...rest } = raw as Record<string, unknown>;
  return { ...rest, accounts: placed.map(({ keyPrefix: _prefix, ...a }) => a) };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

function isSecretPath(path: readonly PropertyKey[]): boolean {
  return path.some((p) => typeof p === 'string' && SECRET_KEYS.has(p));
}

function describeValue(value: unknown, secret: boolean): string {
  if (secret && typeof value === 'string') {
    if (/^postgres(ql)?:\/\//.test(value)) return JSON.stringify(redactUrl(value));
    return value.length === 0 ? '""' : `"${'*'.repeat(Math.min(value.length, 8))}" (hidden)`;
  }
  const s = JSON.stringify(maskSecretKeys(value));
  return s === undefined ? String(value) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function hintFor(key: string): string {
  if (key === 'platform.apiKey') return ' Set PLATFORM_API_KEY in the environment or .env.';
  if (key === 'database.url') return ' Set DATABASE_URL, e.g. postgres://user@127.0.0.1:5432/db.';
  if (key === 'platform.baseUrl') return ' Use the versioned base address, e.g. https://api.example.com/v1.';
  if (key.endsWith('conflictPolicy')) return ' Use one of remote-wins, local-wins, manual.';
  if (key.endsWith('conflictScope')) return ' Use field (merge field by field) or item (the whole change is one conflict).';
  return '';
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
