/**
 * The command line: parses, then calls into the modules. Exit codes: 0 success,
 * 1 a run failed, 2 bad usage or config.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { UsageError, exitCodeFor, coerceError } from './errors.js';
import { type GlobalOptions, type Output, loadAppConfig, openContext, stdio } from './context.js';
import { createInterface } from 'node:readline/promises';
import { assertConfigWritable, pickLists, runInit } from './commands/init.js';
import { runMigrate } from './commands/migrate.js';
import { exitCodeOf, platformCheck, runCheck } from './commands/check.js';
import { type DiscoveredList, type Discovery, discoverLists, formatDiscovery, runDiscover } from './commands/discover.js';
import { parseConfig, readEnvironment } from './config.js';
import { parseDay, runPulls, selectLists } from './commands/pull.js';
import { runStatus } from './commands/status.js';
import { conflictsTable, resolveConflictCommand, runPushes, showConflict } from './commands/push.js';
import { runReconcile } from './commands/reconcile.js';
import { runHooksList, runHooksRemove, runHooksSubscribe, runHooksSubscribeList } from './commands/hooks.js';
import { DEFAULT_HOOK_RESOURCE, callbackUrlFor, parseHookType } from './webhooks/subscribe.js';
import { runServe } from './commands/serve.js';
import { runDemo } from './commands/demo.js';
import { registerEmulatorCommand } from './emulator/command.js';
import { appLogger, createClient, type AppContext } from './context.js';
import { pullUsers } from './sync/users.js';
import { createDb } from './db.js';
import { readRegistry } from './mirror/registry.js';
import { scrubSecrets } from './secrets.js';
import { LOG_FORMATS } from './log-format.js';
import { plural } from './format.js';

export function buildProgram(io: Output, setCode: (code: number) => void): Command {
  const program = new Command('listsync')
    .description('Keeps a PostgreSQL mirror of the platform\'s lists fresh, and writes edits back version-checked.')
    .option('-c, --config <path>', 'config file (default: $LISTSYNC_CONFIG or ./listsync.config.json)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .addOption(new Option('--log-format <format>', 'log lines as JSON or one short line each (default: pretty on a terminal, else json)').choices([...LOG_FORMATS]))
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run "listsync --help" for usage)')
    .exitOverride();

  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  /** Opens config + database + client for the action, and closes them after. */
  const withContext = async (fn: (ctx: AppContext) => Promise<number | void>): Promise<void> => {
    const ctx = await openContext(globals(), io);
    try {
      const code = await fn(ctx);
      if (typeof code === 'number') setCode(code);
    } finally {
      await ctx.close();
    }
  };

  program
    .command('init')
    .description('write a commented listsync.config.json and .env.example in the current directory')
    .option('--force', 'overwrite an existing config file', false)
    .option('--discover', "fill lists[] from the platform's applications and lists (needs PLATFORM_API_KEY)", false)
    .option('--base-url <url>', 'with --discover: the platform API address ending with /v1 (default $PLATFORM_BASE_URL)')
    .option('--all', 'with --discover: take every list instead of asking', false)
    .option('--list <listID>', 'with --discover: take this list (listID, appID/listID or its config name); repeatable', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .action(async (opts: { force: boolean; discover: boolean; baseUrl?: string; all: boolean; list: string[] }) => {
      const dir = process.cwd();
      if (!opts.discover && (opts.all || opts.list.length || opts.baseUrl)) throw new UsageError('--all, --list and --base-url go with --discover.');
      assertConfigWritable(dir, opts.force);
      const discovered = opts.discover ? await discoverForInit(opts, io, globals()) : undefined;
      for (const file of runInit({ dir, force: opts.force, discovered })) io.out(`wrote ${file}`);
      if (discovered) io.out(`with ${discovered.lists.length} list(s): ${discovered.lists.map((l) => l.name).join(', ')}`);
      io.out('Next: copy .env.example to .env, fill it in, then run "listsync check".');
    });

  program
    .command('check')
    .description('validate the config, reach the database and the platform, check filter/sort fields are indexed')
    .action(async () => {
      const config = loadAppConfig(globals());
      const logger = appLogger(config, globals());
      // check answers quickly: one retry, not the run's full backoff.
      const findings = await runCheck(config, platformCheck(() => createClient({ ...config, platform: { ...config.platform, retries: 1 } }, logger)));
      for (const f of findings) io.out(`${f.ok ? 'ok  ' : 'FAIL'} ${f.check}: ${f.message}`);
      setCode(exitCodeOf(findings));
    });

  program
    .command('migrate')
    .description("apply listsync's own migrations (schema listsync); safe to run repeatedly")
    .action(async () => {
      const ctx = await openContext(globals(), io);
      try {
        const applied = await runMigrate(ctx.db);
        io.out(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'already up to date');
      } finally {
        await ctx.close();
      }
    });

  program
    .command('discover')
    .description("print each list's fields, platform types, the column types they map to, and whether they are indexed; with --apps, the account's applications and lists")
    .option('-l, --list <name>', 'only this list')
    .option('--apps', "list the account's applications and their lists with IDs and titles, and a lists block for the config", false)
    .action(async (opts: { list?: string; apps: boolean }) => {
      if (opts.apps && opts.list) throw new UsageError('--apps lists every application; it takes no --list.');
      const config = loadAppConfig(globals());
      const lists = opts.apps ? [] : selectLists({ config }, opts.list);
      const client = createClient(config, appLogger(config, globals()));
      // The mirror's registry, when the database is reachable, says which columns exist and which fields were renamed.
      const db = createDb({ url: config.database.url, poolMax: 1 });
      const registry = (name: string) => readRegistry(db, name).catch(() => undefined);
      try {
        io.out(opts.apps ? formatDiscovery(await discoverLists(client)) : await runDiscover({ client }, lists, registry));
      } finally {
        await client.close();
        await db.destroy();
      }
    });

  program
    .command('pull')
    .description('one incremental pull of every list (or one): platform -> mirror')
    .option('-l, --list <name>', 'only this list')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .action((opts: { list?: string; wait: boolean }) =>
      withContext((ctx) => runPulls(ctx, selectLists(ctx, opts.list), { kind: 'incremental' }, { wait: opts.wait, progress: false })),
    );

  program
    .command('backfill')
    .description('re-read a date range of a list (by its cursor field), with progress; resumable after a crash')
    .requiredOption('-l, --list <name>', 'the list')
    .requiredOption('--from <YYYY-MM-DD>', 'first platform date (inclusive)')
    .option('--to <YYYY-MM-DD>', 'last platform date (inclusive); default: open-ended')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .action((opts: { list: string; from: string; to?: string; wait: boolean }) => {
      const from = parseDay(opts.from, '--from');
      const to = opts.to === undefined ? undefined : parseDay(opts.to, '--to');
      if (to && to < from) throw new UsageError(`--to ${to} is before --from ${from}.`);
      return withContext((ctx) => runPulls(ctx, selectLists(ctx, opts.list), { kind: 'backfill', from, to }, { wait: opts.wait, progress: true }));
    });

  program
    .command('push')
    .description('send pending local changes to the platform, version-checked')
    .option('-l, --list <name>', 'only this list')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .option('--retry-failed', 'queue changes marked failed again before pushing', false)
    .action((opts: { list?: string; wait: boolean; retryFailed: boolean }) =>
      withContext((ctx) => runPushes(ctx, selectLists(ctx, opts.list), { wait: opts.wait, retryFailed: opts.retryFailed })),
    );

  program
    .command('sync')
    .description('push, then pull: one full cycle')
    .option('-l, --list <name>', 'only this list')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .action((opts: { list?: string; wait: boolean }) =>
      withContext(async (ctx) => {
        const lists = selectLists(ctx, opts.list);
        const pushed = await runPushes(ctx, lists, { wait: opts.wait, retryFailed: false });
        const pulled = await runPulls(ctx, lists, { kind: 'incremental' }, { wait: opts.wait, progress: false });
        return Math.max(pushed, pulled);
      }),
    );

  const conflicts = program
    .command('conflicts')
    .description('inspect and settle write-back conflicts (default: list the open ones)')
    .option('-l, --list <name>', 'only this list')
    .option('--all', 'include resolved conflicts', false)
    .action((opts: { list?: string; all: boolean }) => withContext(async (ctx) => io.out(await conflictsTable(ctx, opts))));
  conflicts
    .command('list')
    .description('list conflicts')
    .option('-l, --list <name>', 'only this list')
    .option('--all', 'include resolved conflicts', false)
    .action((opts: { list?: string; all: boolean }) => withContext(async (ctx) => io.out(await conflictsTable(ctx, opts))));
  conflicts
    .command('show <id>')
    .description('both sides of a conflict, field by field')
    .action((id: string) => withContext(async (ctx) => io.out(await showConflict(ctx, conflictId(id)))));
  conflicts
    .command('resolve <id>')
    .description('settle a conflict: keep the local change (sent by the next push) or the platform\'s version')
    .addOption(new Option('--keep <side>', 'which side wins').choices(['local', 'remote']).makeOptionMandatory())
    .action((id: string, opts: { keep: 'local' | 'remote' }) => withContext(async (ctx) => io.out(await resolveConflictCommand(ctx, conflictId(id), opts.keep))));

  program
    .command('users')
    .description('pull the users directory (POST /users/search) into the users table')
    .action(() =>
      withContext(async (ctx) => {
        const r = await pullUsers({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger });
        io.out(`users: ${plural(r.counters.pages, 'page')}; inserted ${r.counters.rows_inserted}, updated ${r.counters.rows_updated}, unchanged ${r.counters.rows_unchanged}`);
      }),
    );

  program
    .command('reconcile')
    .description('find items deleted on the platform: sweep every ID, mark rows not seen with _deleted_at, undelete rows seen again')
    .option('-l, --list <name>', 'only this list')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .action((opts: { list?: string; wait: boolean }) => withContext((ctx) => runReconcile(ctx, selectLists(ctx, opts.list), { wait: opts.wait })));

  const hooks = program.command('hooks').description('webhook subscriptions: subscribe, list, remove');
  hooks
    .command('subscribe')
    .description(
      'with --list: subscribe the list\'s item events (created or modified, deleted) once, as serve does for lists with "realtime"; otherwise create a workflow subscription (POST /hooks). Callbacks go to a secret URL served by "listsync serve"',
    )
    .option('-l, --list <name>', 'subscribe this list\'s item events (reuses its subscriptions when they exist)')
    .option('--channel <name>', 'workflow subscriptions: channel name; the platform sends it back as the Channel header')
    .option('--type <n>', 'workflow subscriptions: event type code, an integer the platform defines for the event kind (it publishes no list; ask its admin). Sent back as the Type header, which every callback must match')
    .option('--resource <resource>', 'workflow subscriptions: subscribed resource', DEFAULT_HOOK_RESOURCE)
    .option('--callback-url <url>', 'public base URL the platform reaches serve at (default serve.publicUrl); /hooks/<token> is appended')
    .action((opts: { list?: string; channel?: string; type?: string; resource: string; callbackUrl?: string }) => {
      callbackUrlFor(loadAppConfig(globals()), 'check', opts.callbackUrl);
      if (opts.list !== undefined) {
        const name = opts.list;
        return withContext((ctx) => runHooksSubscribeList(ctx, selectLists(ctx, name)[0]!, { callbackUrl: opts.callbackUrl }));
      }
      if (opts.channel === undefined || opts.type === undefined) throw new UsageError('hooks subscribe needs --list L (a list\'s item events) or --channel C --type N (a workflow subscription).');
      const type = parseHookType(opts.type);
      const channel = opts.channel;
      return withContext((ctx) => runHooksSubscribe(ctx, { channel, type, resource: opts.resource, callbackUrl: opts.callbackUrl }));
    });
  hooks
    .command('remove <id>')
    .description('remove a subscription (the id "hooks list" shows): here, and on the platform for a list\'s item events')
    .action((id: string) => {
      if (!/^\d{1,18}$/.test(id)) throw new UsageError(`hooks remove takes the subscription id "listsync hooks list" shows (got ${JSON.stringify(id)}).`);
      return withContext((ctx) => runHooksRemove(ctx, Number(id)));
    });
  hooks
    .command('list')
    .description('print the webhook subscriptions (tokens masked) with their event counts')
    .action(() => withContext((ctx) => runHooksList(ctx)));

  program
    .command('status')
    .description('per list: last success, watermark, lag, rows, pending changes, conflicts, last error')
    .action(() => withContext(async (ctx) => io.out(await runStatus(ctx))));

  program
    .command('serve')
    .description('run the schedules, the webhook receiver, /healthz and /metrics until SIGTERM')
    .option('--port <n>', 'HTTP port (default serve.port)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('a port number 0-65535');
      return n;
    })
    .action((opts: { port?: number }) => withContext((ctx) => runServe(ctx, { port: opts.port })));

  program
    .command('demo')
    .description('start the emulator and a database, run the real commands end to end, and print a tour')
    .option('--items <n>', 'items in the sample list', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a positive whole number');
      return n;
    }, 5000)
    .option('--keep', 'keep the emulator and the database running after the tour (until Ctrl-C), and print how to use them', false)
    .action((opts: { items: number; keep: boolean }) => runDemo({ io, items: opts.items, keep: opts.keep }).then(setCode));

  registerEmulatorCommand(program);
  return program;
}

/** init --discover: reaches the platform from --base-url / PLATFORM_BASE_URL and PLATFORM_API_KEY, finds the lists and picks. */
async function discoverForInit(
  opts: { baseUrl?: string; all: boolean; list: string[] },
  io: Output,
  globals: GlobalOptions,
): Promise<{ baseUrl: string; lists: DiscoveredList[] }> {
  const env = readEnvironment();
  const baseUrl = opts.baseUrl ?? env.PLATFORM_BASE_URL;
  if (!baseUrl) throw new UsageError('init --discover needs the platform API address: pass --base-url https://<host>/v1 or set PLATFORM_BASE_URL.');
  if (!env.PLATFORM_API_KEY) throw new UsageError('init --discover needs the API key: set PLATFORM_API_KEY in the environment or in .env.');
  // Only the platform part matters here; the database is not reached.
  const config = parseConfig({ platform: { baseUrl }, database: { url: 'postgres://not-used-by-init' } }, env, '--base-url / PLATFORM_BASE_URL');
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
    const lists = await pickLists(found.lists, { all: opts.all, picks: opts.list, ask: rl && ((q) => rl.question(q)), out: (t) => io.out(t) });
    return { baseUrl: config.platform.baseUrl, lists };
  } finally {
    rl?.close();
  }
}

function conflictId(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`A conflict id is a positive whole number, got "${value}".`);
  return n;
}

export async function main(argv: readonly string[], io: Output = stdio): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    const e = coerceError(err);
    io.err(`listsync: ${scrubSecrets(e.message)}`);
    return exitCodeFor(e);
  }
}
