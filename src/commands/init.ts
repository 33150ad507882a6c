/** `listsync init`: writes a commented config file and .env.example. */
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE } from '../config.js';
import { UsageError } from '../errors.js';
import type { DiscoveredList } from './discover.js';
import { createInterface } from 'node:readline/promises';
import { parseConfig, readEnvironment } from '../config.js';
import { appLogger, createClient, type GlobalOptions, type Output } from '../context.js';
import { discoverLists, type Discovery } from './discover.js';
import type { CommandKit } from './command-kit.js';

/** The push schedule `init --write-back` writes: SQL edits are sent back every 2 minutes. */
export const WRITE_BACK_SCHEDULE = '*/2 * * * *';

export const SAMPLE_CONFIG = {
  '//': 'listsync config. Keys starting with // are comments. Secrets come from the environment (.env): ${NAME} is replaced by the variable NAME.',
  platform: {
    '//': "baseUrl ends with /v1. timeZone is the platform's zone: dates in filters and values are its calendar dates.",
    baseUrl: 'http://127.0.0.1:4010/v1',
    apiKey: '${PLATFORM_API_KEY}',
    timeZone: 'UTC',
    requestsPerSecond: 10,
  },
  database: {
    '//': 'schema holds the mirror tables; listsync keeps its own state in schema "listsync".',
    url: '${DATABASE_URL}',
    schema: 'mirror',
  },
  lists: [
    {
      '//': 'cursorField and sortField must be indexed on the platform (listsync check verifies it).',
      name: 'orders',
      appID: 'demo',
      listID: 'orders',
      cursorField: 'Modified',
      sortField: 'Created',
      lookbackDays: 1,
      conflictPolicy: 'remote-wins',
      schedule: {
        '//': `Write-back is not scheduled: SQL edits in the mirror reach the platform only with "listsync push", until you add "push": "${WRITE_BACK_SCHEDULE}" here (listsync init --write-back writes it).`,
        pull: '*/10 * * * *',
        reconcile: '30 3 * * *',
      },
    },
  ],
  users: { enabled: true, schedule: '0 * * * *' },
  serve: { port: 8080 },
};

export const SAMPLE_ENV = `# listsync secrets. Copy to .env (never commit .env).
# The platform API key (system settings of the platform). For the emulator: emulator-key
PLATFORM_API_KEY=
# PostgreSQL holding the mirror, e.g. postgres://listsync:secret@127.0.0.1:5432/reporting
DATABASE_URL=
`;

/** The config file's path in `dir`; throws when it exists and `force` is not set. */
export function assertConfigWritable(dir: string, force: boolean): string {
  const configPath = resolve(dir, DEFAULT_CONFIG_FILE);
  if (existsSync(configPath) && !force) throw new UsageError(`${configPath} already exists; use --force to overwrite it.`);
  return configPath;
}

/** A list's config entry: the sample list's settings with the discovered IDs, and the title as its comment. */
function listEntry(list: DiscoveredList): Record<string, unknown> {
  const { '//': hint, name: _name, appID: _app, listID: _list, ...settings } = SAMPLE_CONFIG.lists[0]!;
  const about = list.description ? `${list.title}: ${list.description}` : list.title;
  return { '//': `${about} (application ${list.appTitle}). ${hint}`, name: list.name, appID: list.appID, listID: list.listID, ...settings };
}

/** A list entry with write-back scheduled: the push schedule in place of the comment that says how to add it. */
function withWriteBack(list: Record<string, unknown>): Record<string, unknown> {
  const { '//': _howTo, ...schedule } = list.schedule as Record<string, string>;
  return { ...list, schedule: { ...schedule, push: WRITE_BACK_SCHEDULE } };
}

/**
 * Writes the config and .env.example. With `discovered`, the config holds
 * those lists (and `baseUrl`, the platform they were found on) instead of the
 * sample list. Write-back (a push schedule) is written only with `writeBack`:
 * sending SQL edits to the platform is the user's choice.
 */
export function runInit(opts: {
  dir: string;
  force: boolean;
  discovered?: { baseUrl: string; lists: readonly DiscoveredList[] };
  writeBack?: boolean;
}): string[] {
  const configPath = assertConfigWritable(opts.dir, opts.force);
  const envPath = resolve(opts.dir, '.env.example');
  const d = opts.discovered;
  const lists: Record<string, unknown>[] = d ? d.lists.map(listEntry) : SAMPLE_CONFIG.lists;
  const config = {
    ...SAMPLE_CONFIG,
    platform: { ...SAMPLE_CONFIG.platform, baseUrl: d?.baseUrl ?? SAMPLE_CONFIG.platform.baseUrl },
    lists: opts.writeBack ? lists.map(withWriteBack) : lists,
  };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(envPath, SAMPLE_ENV);
  return [configPath, envPath];
}

/**
 * Which discovered lists go into the config: all (`all`), the ones named by
 * `picks` (listID, config name or appID/listID), or, on a terminal, the ones
 * the user picks from a numbered menu (`ask`). Anything else is a usage error.
 */
export async function pickLists(
  lists: readonly DiscoveredList[],
  opts: { all: boolean; picks: readonly string[]; ask?: (question: string) => Promise<string>; out: (text: string) => void },
): Promise<DiscoveredList[]> {
  if (lists.length === 0)
    throw new UsageError(
      "The platform lists no lists for this account: there is nothing to put in the config. Check that the API key's user can see the applications.",
    );
  if (opts.all) return [...lists];
  if (opts.picks.length) return opts.picks.map((p) => findList(lists, p));
  if (!opts.ask)
    throw new UsageError(
      'init --discover needs a terminal to ask which lists to mirror: pass --all to take every list, or --list <listID> (repeatable) to name them.',
    );
  lists.forEach((l, i) =>
    opts.out(`${String(i + 1).padStart(3)}. ${l.appID}/${l.listID}  ${l.title}${l.description ? ` (${l.description})` : ''}`),
  );
  for (;;) {
    const answer = (await opts.ask('Lists to mirror (numbers like 1,3-5, or "all"): ')).trim();
    const picked = parsePicks(answer, lists.length);
    if (picked) return picked.map((i) => lists[i]!);
    opts.out(`"${answer}" is not a choice: give numbers 1-${lists.length} separated by commas, ranges like 2-4, or "all".`);
  }
}

function findList(lists: readonly DiscoveredList[], pick: string): DiscoveredList {
  const found = lists.find((l) => l.listID === pick || l.name === pick || `${l.appID}/${l.listID}` === pick);
  if (!found)
    throw new UsageError(
      `--list ${pick}: no such list on the platform. Known lists: ${lists.map((l) => `${l.appID}/${l.listID}`).join(', ')}.`,
    );
  return found;
}

/** "1,3-5" → [0, 2, 3, 4] (0-based, in order, no repeats); "all" → every index; undefined when not a valid answer. */
export function parsePicks(answer: string, count: number): number[] | undefined {
  if (/^all$/i.test(answer)) return Array.from({ length: count }, (_, i) => i);
  const picked = new Set<number>();
  for (const part of answer.split(',').map((p) => p.trim())) {
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (!m) return undefined;
    const from = Number(m[1]);
    const to = Number(m[2] ?? m[1]);
    if (from < 1 || to > count || from > to) return undefined;
    for (let i = from; i <= to; i++) picked.add(i - 1);
  }
  return picked.size ? [...picked] : undefined;
}

export function register({ program, io, globals }: CommandKit): void {
  program
    .command('init')
    .description('write a commented listsync.config.json and .env.example in the current directory')
    .option('--force', 'overwrite an existing config file', false)
    .option('--discover', "fill lists[] from the platform's applications and lists (needs PLATFORM_API_KEY)", false)
    .option('--base-url <url>', 'with --discover: the platform API address ending with /v1 (default $PLATFORM_BASE_URL)')
    .option('--all', 'with --discover: take every list instead of asking', false)
    .option(
      '--write-back',
      `schedule write-back: serve sends SQL edits to the platform every 2 minutes (schedule.push "${WRITE_BACK_SCHEDULE}")`,
      false,
    )
    .option(
      '--list <listID>',
      'with --discover: take this list (listID, appID/listID or its config name); repeatable',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .action(async (opts: { force: boolean; discover: boolean; baseUrl?: string; all: boolean; list: string[]; writeBack: boolean }) => {
      const dir = process.cwd();
      if (!opts.discover && (opts.all || opts.list.length || opts.baseUrl))
        throw new UsageError('--all, --list and --base-url go with --discover.');
      assertConfigWritable(dir, opts.force);
      const discovered = opts.discover ? await discoverForInit(opts, io, globals()) : undefined;
      for (const file of runInit({ dir, force: opts.force, discovered, writeBack: opts.writeBack })) io.out(`wrote ${file}`);
      if (discovered) io.out(`with ${discovered.lists.length} list(s): ${discovered.lists.map((l) => l.name).join(', ')}`);
      io.out(writeBackNote(opts.writeBack));
      io.out('Next: copy .env.example to .env, fill it in, then run "listsync check".');
    });
}

/** init --discover: reaches the platform from --base-url / PLATFORM_BASE_URL and PLATFORM_API_KEY, finds the lists and picks. */
async function discoverForInit(
  opts: { baseUrl?: string; all: boolean; list: string[] },
  io: Output,
  globals: GlobalOptions,
): Promise<{ baseUrl: string; lists: DiscoveredList[] }> {
  const env = readEnvironment();
  const baseUrl = opts.baseUrl ?? env.PLATFORM_BASE_URL;
  if (!baseUrl)
    throw new UsageError('init --discover needs the platform API address: pass --base-url https://<host>/v1 or set PLATFORM_BASE_URL.');
  if (!env.PLATFORM_API_KEY) throw new UsageError('init --discover needs the API key: set PLATFORM_API_KEY in the environment or in .env.');
  // Only the platform part matters here; the database is not reached.
  const config = parseConfig(
    { platform: { baseUrl }, database: { url: 'postgres://not-used-by-init' } },
    env,
    '--base-url / PLATFORM_BASE_URL',
  );
  const client = createClient(config, appLogger(config, globals));
  let found: Discovery;
  try {
    found = await discoverLists(client);
  } finally {
    await client.close();
  }
  const terminal = io.isTTY && Boolean(process.stdin.isTTY);
  const rl = terminal && !opts.all && !opts.list.length ? createInterface({ input: process.stdin, output: process.stdout }) : undefined;
  try {
    const lists = await pickLists(found.lists, {
      all: opts.all,
      picks: opts.list,
      ask: rl && ((q) => rl.question(q)),
      out: (t) => io.out(t),
    });
    return { baseUrl: config.platform.baseUrl, lists };
  } finally {
    rl?.close();
  }
}

/** What init says about write-back: scheduled, or how to turn it on. */
function writeBackNote(scheduled: boolean): string {
  return scheduled
    ? `Write-back is scheduled (lists[].schedule.push "${WRITE_BACK_SCHEDULE}"): serve sends SQL edits in the mirror to the platform.`
    : 'Write-back is not scheduled: SQL edits in the mirror reach the platform only with "listsync push". ' +
        `To send them on a schedule, add "push": "${WRITE_BACK_SCHEDULE}" to a list's schedule (or run init --write-back).`;
}
