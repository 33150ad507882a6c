/**
 * `listsync demo` (`npm run demo`): the emulator with the built-in sample, a
 * database (DATABASE_URL, or an embedded PostgreSQL kept in .listsync/), then
 * the real commands end to end — migrate, check, discover, pull, users, a
 * reporting query, push and a staged conflict, status — with a short tour.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { consoleListen, loadConfig, redactUrl, runtimeEnv } from '../config.js';
import { consoleAnnouncement, consoleToken } from '../console/console-token.js';
import { startConsole } from '../console/console-server.js';
import { createClient } from '../context.js';
import { createDb } from '../db.js';
import { silentLogger } from '../logger.js';
import type { Output } from '../context.js';
import { startEmbeddedDb, type EmbeddedDb } from '../embedded-db.js';
import { SAMPLE_FIELDS as F, startEmulator, type RunningEmulator } from '../emulator/index.js';
import { table } from '../format.js';
import { LATEST_CONFLICT_ID_SQL } from '../store/conflicts.js';
import { OUTBOX_TABLE, PENDING_CHANGES_SQL } from '../store/outbox.js';
import { COUNT_RUNS_SQL } from '../store/runs.js';
import { coerceError } from '../errors.js';
import { exitCodeFor } from '../exit-code.js';
import type { CommandKit } from './command-kit.js';
import { wholeNumber } from './options.js';

export const DEMO_DATABASE = 'listsync_demo';

export interface DemoOptions {
  io: Output;
  items: number;
  /** Working directory for the config and the embedded database (default ./.listsync). */
  dir?: string;
  databaseUrl?: string;
  /** Keep the emulator and the database running after the tour, until SIGINT/SIGTERM. */
  keep?: boolean;
  /** Runs a listsync command line (argv after `node listsync`) and returns its exit code: the real CLI. */
  run: (args: readonly string[], io: Output) => Promise<number>;
}

/** The tour in named steps; whatever step fails, the emulator, the database and the console are stopped. */
export async function runDemo(opts: DemoOptions): Promise<number> {
  const { io } = opts;
  const dir = resolve(opts.dir ?? '.listsync');
  mkdirSync(dir, { recursive: true });

  demoStep(io, 1, `Starting the platform emulator with the built-in sample (${opts.items} orders, a users directory)`);
  const emu = await startEmulator({ port: 0, sample: true, items: opts.items });
  io.out(`emulator at ${emu.baseUrl} (API key ${emu.apiKey}; rate limit 10 requests/s like the real account)`);

  const held: DemoResources = {};
  try {
    demoStep(io, 2, 'Getting a PostgreSQL database');
    const dbUrl = await demoDatabase(opts, dir, held);
    io.out(`database ${redactUrl(dbUrl)}`);
    const configPath = writeDemoConfig(dir, emu, dbUrl);
    io.out(`config written to ${configPath}`);

    const cli = async (title: string, ...args: string[]): Promise<void> => {
      io.out(`\n$ listsync ${args.join(' ')}    # ${title}`);
      const code = await opts.run(['--config', configPath, '--log-level', 'warn', ...args], io);
      if (code !== 0) throw new Error(`listsync ${args.join(' ')} exited with ${code}`);
    };

    demoStep(io, 3, 'Running the real commands');
    await cli("create listsync's own tables", 'migrate');
    await cli('config, database, platform, indexed fields', 'check');
    await cli('what the mirror table will look like', 'discover');
    await cli('first run: a full load, pages in flight under the 10/s budget', 'pull');
    await cli('second run: incremental, nothing changed so nothing is rewritten', 'pull');
    await cli('the users directory', 'users');

    demoStep(io, 4, 'Reporting on the mirror with plain SQL');
    const pgClient = new pg.Client({ connectionString: dbUrl });
    held.pgClient = pgClient;
    // The tour's own connection: the server stopping under it is an error of the tour, not a crash.
    pgClient.on('error', (err) => io.err(`demo: the database connection ended: ${coerceError(err).message}`));
    await pgClient.connect();
    await reportingTour(pgClient, io);
    await writeBackTour(pgClient, emu, cli, io);
    await cli('per list: last success, watermark, lag, rows, changes', 'status');

    demoStep(io, 7, 'Done');
    // Ctrl-C on a terminal reaches the embedded server too (one process group): no connection of
    // the tour's may be open while it shuts down.
    await pgClient.end();
    held.pgClient = undefined;
    if (opts.keep) {
      // Listening before saying "press Ctrl-C", and until the end: a signal never finds the process without a handler.
      held.stopSignals = untilSignal();
      held.stopConsole = await startDemoConsole(configPath, io);
      io.out(keepInstructions(configPath, emu.baseUrl));
      await held.stopSignals.received;
      io.out('demo: stopping the emulator and the database');
    } else {
      io.out(tryItYourself());
    }
    return 0;
  } catch (err) {
    const e = coerceError(err);
    io.err(`demo failed: ${e.message}`);
    return exitCodeFor(e);
  } finally {
    await held.pgClient?.end().catch(() => undefined);
    await held.stopConsole?.().catch(() => undefined);
    await emu.close();
    await held.embedded?.stop();
    held.stopSignals?.dispose();
  }
}

/** What the tour started and must stop, whatever step fails. */
interface DemoResources {
  embedded?: EmbeddedDb | undefined;
  pgClient?: pg.Client | undefined;
  stopSignals?: ReturnType<typeof untilSignal> | undefined;
  stopConsole?: (() => Promise<void>) | undefined;
}

function demoStep(io: Output, n: number, text: string): void {
  io.out(`\n== ${n}. ${text}`);
}

/** DATABASE_URL's server, or an embedded PostgreSQL kept in `dir`; a fresh demo database on it. */
async function demoDatabase(opts: DemoOptions, dir: string, held: DemoResources): Promise<string> {
  const { io } = opts;
  const serverUrl = opts.databaseUrl ?? runtimeEnv().databaseUrl;
  let baseUrl: string;
  if (serverUrl) {
    baseUrl = serverUrl;
    io.out(`using DATABASE_URL ${redactUrl(serverUrl)}`);
  } else {
    const first = !existsSync(join(dir, 'pg', 'PG_VERSION'));
    io.out(
      `no DATABASE_URL: starting an embedded PostgreSQL in ${join(dir, 'pg')}${first ? ' (the first start sets it up: a few seconds)' : ''}`,
    );
    held.embedded = await startEmbeddedDb({ dir: join(dir, 'pg'), persistent: true });
    baseUrl = held.embedded.url;
  }
  return freshDatabase(baseUrl, io);
}

/** The demo's config: the emulator, the demo database, the sample's orders list and the users directory. */
function writeDemoConfig(dir: string, emu: RunningEmulator, dbUrl: string): string {
  const configPath = join(dir, 'demo.config.json');
  writeFileSync(
    configPath,
    `${JSON.stringify(
      {
        '//': 'Written by listsync demo: the emulator and the demo database.',
        platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey, timeZone: 'UTC', requestsPerSecond: 10 },
        database: { url: dbUrl, schema: 'demo' },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', conflictPolicy: 'remote-wins', schedule: { pull: '*/5 * * * *' } }],
        users: { enabled: true, schedule: '0 * * * *' },
      },
      null,
      2,
    )}\n`,
  );
  return configPath;
}

/** Step 4: a report in plain SQL over the mirror, and the row counts. */
async function reportingTour(pgClient: pg.Client, io: Output): Promise<void> {
  const sql = `select status, count(*) as orders, sum(amount) as revenue,
       count(*) filter (where paid) as paid, min(order_date) as first_order
  from demo.orders
 where _deleted_at is null
 group by status
 order by revenue desc nulls last`;
  io.out(sql);
  const report = await pgClient.query(sql);
  io.out(
    table(
      report.fields.map((f) => f.name),
      report.rows.map((r: Record<string, unknown>) => report.fields.map((f) => r[f.name])),
    ),
  );
  const counts = await pgClient.query(
    `select (select count(*) from demo.orders) as orders, (select count(*) from demo.platform_users) as users, (${COUNT_RUNS_SQL}) as runs`,
  );
  io.out(`rows: ${JSON.stringify(counts.rows[0])}`);
}

/** Steps 5 and 6: an edit in SQL pushed version-checked, then a conflict staged and settled. */
async function writeBackTour(
  pgClient: pg.Client,
  emu: RunningEmulator,
  cli: (title: string, ...args: string[]) => Promise<void>,
  io: Output,
): Promise<void> {
  demoStep(io, 5, 'Write-back: an edit made with SQL reaches the platform, version-checked');
  // An order not paid yet, so marking it paid is a visible change; and another one for the conflict.
  const unpaid = await pgClient.query(
    `select id, customer, row_version from demo.orders where _deleted_at is null and paid is not true order by id limit 1`,
  );
  const edited = (unpaid.rows as { id: string; customer: string; row_version: string }[])[0];
  const other = await pgClient.query(`select id from demo.orders where _deleted_at is null and id <> $1 order by id limit 1`, [edited!.id]);
  const contested = (other.rows as { id: string }[])[0];
  const update = `update demo.orders set status = 'Paid', paid = true, customer = 'Acme (fixed in SQL)' where id = '${edited!.id}'`;
  io.out(`${update};`);
  await pgClient.query(update);
  const outbox = await pgClient.query(PENDING_CHANGES_SQL);
  io.out(`captured in ${OUTBOX_TABLE}: ${JSON.stringify(outbox.rows)}`);
  await cli('PATCH with RowVersion = the base version, only the changed fields', 'push');
  const onPlatform = await emu.admin.getItem('demo', 'orders', edited!.id);
  const shown = (field: string): string => JSON.stringify(onPlatform[field]);
  io.out(
    `on the platform now: ${F.customer} (Customer)=${shown(F.customer)} ${F.status} (Status)=${shown(F.status)} ${F.paid} (Paid)=${shown(F.paid)} RowVersion ${edited!.row_version} -> ${onPlatform.RowVersion}`,
  );

  demoStep(io, 6, 'A conflict: the same item edited on the platform and in the mirror before a push');
  await emu.admin.editItem('demo', 'orders', contested!.id, { Data: { [F.customer]: 'Changed on the platform' } });
  io.out(`someone edits item ${contested!.id} on the platform (Customer = "Changed on the platform")`);
  await pgClient.query(`update demo.orders set customer = 'Changed in SQL' where id = $1`, [contested!.id]);
  io.out(`and you edit the same item in SQL (Customer = "Changed in SQL")`);
  await cli("the PATCH is refused for its version; policy remote-wins keeps the platform's value and records both sides", 'push');
  await cli('every conflict, with how it was settled', 'conflicts', '--all');
  const cid = await pgClient.query(LATEST_CONFLICT_ID_SQL);
  await cli('both sides, field by field', 'conflicts', 'show', String((cid.rows[0] as { id: string }).id));
}

/**
 * The console, as serve runs it, on the demo's config (serve.console: 127.0.0.1:8081, this
 * machine only); on any free port when that one is taken. Says where; returns how to stop it.
 */
async function startDemoConsole(configPath: string, io: Output): Promise<() => Promise<void>> {
  const config = loadConfig({ path: configPath });
  const at = consoleListen(config);
  if (!at) return async () => undefined;
  const logger = silentLogger();
  const db = createDb({ url: config.database.url, poolMax: 4 });
  const client = createClient(config, logger, db);
  const access = consoleToken(config, at.host);
  const start = (port: number) => startConsole({ config, db, client, logger, host: at.host, port, token: access.token });
  const running = await start(at.port).catch((err: unknown) => {
    if ((coerceError(err).cause as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE') throw err;
    io.out(`port ${at.port} is taken: the console takes any free port instead`);
    return start(0);
  });
  io.out(consoleAnnouncement(running.url, access));
  return async () => {
    await running.close();
    await client.close();
    await db.destroy();
  };
}

/** What to type to use the running demo: every command works as printed. */
function keepInstructions(configPath: string, emulatorUrl: string): string {
  return [
    `The emulator (${emulatorUrl}) and the database keep running until you press Ctrl-C here.`,
    'In another terminal, from this directory:',
    `  export LISTSYNC_CONFIG=${configPath}`,
    '  npm run listsync -- status       # or "listsync status" once installed (npm link, or npm install -g .)',
    '  npm run listsync -- pull',
    '  npm run listsync -- serve --port 8080 --console 127.0.0.1:8082   # 8081 is the console above',
    'The config file holds the emulator\'s URL and key and the database URL; edit rows in schema "demo" and run push.',
  ].join('\n');
}

function tryItYourself(): string {
  return [
    'The emulator and database stop now. To keep them running and try the commands yourself:',
    '  npm run demo -- --keep',
    'Or with your own PostgreSQL (from this clone; "listsync ..." once installed with npm link or npm install -g .):',
    '  npm run listsync -- emulator --sample                  # one terminal: the platform at http://127.0.0.1:4010/v1',
    '  npm run listsync -- init                               # another terminal: writes listsync.config.json',
    '  export PLATFORM_API_KEY=emulator-key DATABASE_URL=postgres://USER:PASSWORD@127.0.0.1:5432/DB',
    '  npm run listsync -- migrate && npm run listsync -- check',
  ].join('\n');
}

/** SIGINT or SIGTERM: `received` resolves at the first; later ones are absorbed until `dispose()`. */
function untilSignal(): { received: Promise<void>; dispose(): void } {
  let resolve!: () => void;
  const received = new Promise<void>((r) => (resolve = r));
  const stop = (): void => resolve();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return {
    received,
    dispose() {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}

/** (Re)creates the demo database on the server; falls back to the given database when not allowed. */
async function freshDatabase(serverUrl: string, io: Output): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${DEMO_DATABASE} with (force)`);
    await admin.query(`create database ${DEMO_DATABASE}`);
    const u = new URL(serverUrl);
    u.pathname = `/${DEMO_DATABASE}`;
    return u.toString();
  } catch (err) {
    io.out(`cannot create database ${DEMO_DATABASE} (${coerceError(err).message}); using the given database`);
    return serverUrl;
  } finally {
    await admin.end();
  }
}

export function register({ program, io, setCode }: CommandKit, run: DemoOptions['run']): void {
  program
    .command('demo')
    .description('start the emulator and a database, run the real commands end to end, and print a tour')
    .option('--items <n>', 'items in the sample list', wholeNumber(1, 10_000_000, 'a positive whole number'), 5000)
    .option('--keep', 'keep the emulator and the database running after the tour (until Ctrl-C), and print how to use them', false)
    .action((opts: { items: number; keep: boolean }) => runDemo({ io, items: opts.items, keep: opts.keep, run }).then(setCode));
}
