/**
 * A test world: the emulator over real HTTP, a Postgres database of the
 * test file's own, a validated config pointing at both, and a client.
 */
import { Writable } from 'node:stream';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import { createClient } from '../../src/context.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { fromPlatform, loadTableMapping } from '../../src/mirror/index.js';
import type { PlatformClient } from '../../src/platform/client.js';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../src/emulator/index.js';
import { createTestDatabase, type TestDatabase } from './db.js';

export interface World {
  emu: RunningEmulator;
  t: TestDatabase;
  config: Config;
  client: PlatformClient;
  logger: Logger;
  logs: string[];
  /** A config file for the CLI, in a temp directory. */
  configFile: string;
  cwd: string;
  deps(): { db: TestDatabase['db']; client: PlatformClient; config: Config; logger: Logger };
  close(): Promise<void>;
}

export interface WorldOptions {
  emulator?: EmulatorOptions;
  /** Overrides merged into the one list's config. */
  list?: Record<string, unknown>;
  platform?: Record<string, unknown>;
  database?: Record<string, unknown>;
  /** Extra lists (raw config objects). */
  lists?: Record<string, unknown>[];
  db?: TestDatabase;
}

/** Fast defaults: the emulator's and the client's limit raised to 100/s unless a test is about throttling. */
export async function startWorld(opts: WorldOptions = {}): Promise<World> {
  const emu = await startEmulator({ port: 0, sample: true, items: 2000, rateLimit: { burst: 100, perSecond: 100 }, ...opts.emulator });
  const t = opts.db ?? (await createTestDatabase());
  const raw = {
    platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey, requestsPerSecond: 100, timeoutMs: 5000, ...opts.platform },
    database: { url: t.url, schema: 'mirror', ...opts.database },
    lists: opts.lists ?? [{ name: 'orders', appID: 'demo', listID: 'orders', ...opts.list }],
    // Any free port: test files run side by side, and serve's console would otherwise take 8081.
    serve: { console: '127.0.0.1:0' },
  };
  const config = parseConfig(raw);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({ level: 'debug', secrets: [emu.apiKey], destination: sink });
  const client = createClient(config, logger, t.db);
  const cwd = mkdtempSync(join(tmpdir(), 'listsync-world-'));
  const configFile = join(cwd, 'listsync.config.json');
  writeFileSync(configFile, JSON.stringify({ ...raw, platform: { ...raw.platform, apiKey: undefined } }));
  return {
    emu,
    t,
    config,
    client,
    logger,
    logs,
    configFile,
    cwd,
    deps: () => ({ db: t.db, client, config, logger }),
    async close() {
      await client.close();
      await emu.close();
      if (!opts.db) await t.drop();
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}

function normalize(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (v === undefined) return null;
  return v;
}

/** The mirror's live rows equal the emulator's current items, row for row and value for value; returns the row count. */
export async function expectMirrorEqualsPlatform(
  w: World,
  list = 'orders',
  appID = 'demo',
  listID = 'orders',
  options: { allowExtraRows?: boolean } = {},
): Promise<number> {
  const zone = w.config.platform.timeZone;
  const exported = await w.emu.admin.exportList(appID, listID);
  const mapping = await loadTableMapping(w.t.db, w.config.database.schema, list);
  expect(mapping, 'mirror table registered').toBeDefined();
  const rows = (await w.t.db.withSchema(w.config.database.schema).from(mapping!.table).whereNull('_deleted_at').orderBy('id')) as Record<
    string,
    unknown
  >[];
  const byId = new Map(rows.map((r) => [String(r.id), r]));
  // Pulls cannot see deletes (reconcile does): with allowExtraRows the mirror may hold rows the platform deleted.
  if (options.allowExtraRows) expect(rows.length).toBeGreaterThanOrEqual(exported.items.length);
  else expect(rows.length).toBe(exported.items.length);
  const mismatches: string[] = [];
  for (const item of exported.items) {
    const id = String(item.ListDataID);
    const row = byId.get(id);
    if (!row) {
      mismatches.push(`${id}: missing`);
      continue;
    }
    if (Number(row.row_version) !== Number(item.RowVersion))
      mismatches.push(`${id}: row_version ${String(row.row_version)} != ${item.RowVersion}`);
    for (const [field, column] of [
      ['Created', 'created_at'],
      ['Modified', 'modified_at'],
    ] as const) {
      const want = normalize(fromPlatform('timestamptz', item[field], zone).value);
      if (normalize(row[column]) !== want) mismatches.push(`${id}.${column}: ${String(normalize(row[column]))} != ${String(want)}`);
    }
    for (const c of mapping!.columns) {
      const want = fromPlatform(c.kind, item[c.field], zone);
      const got = normalize(row[c.column]);
      const expected = want.ok ? normalize(want.value) : null;
      if (JSON.stringify(got) !== JSON.stringify(expected))
        mismatches.push(`${id}.${c.column}: ${JSON.stringify(got)} != ${JSON.stringify(expected)}`);
    }
    if (mismatches.length > 10) break;
  }
  expect(mismatches).toEqual([]);
  return rows.length;
}
