/**
 * For the console's tests: a world whose list holds a manual conflict, the
 * console started on it, and a config whose database URL carries a password
 * (a role of its own) so pages can be searched for it.
 */
import { expect } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import { startConsole, type RunningConsole } from '../../src/console/console-server.js';
import { createDb, type Knex } from '../../src/db.js';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { adminUrl, withDatabase } from '../helpers/pg-admin.js';
import type { World } from '../helpers/world.js';

export const DB_PASSWORD = 'console-db-password-7f3a9';
export const CONSOLE_TOKEN = 'console-token-0123456789abcdef';

/**
 * The world's config with a password in the database URL, and a pool that connects with it: a role
 * of the test's own with that password, so a server that checks passwords (embedded PostgreSQL)
 * accepts it too. `drop()` closes the pool and drops the role.
 */
export async function withPassword(w: World): Promise<{ config: Config; db: Knex; drop(): Promise<void> }> {
  const role = `listsync_console_${process.pid}`;
  await withDatabase(adminUrl(w.t.url), (c) => c.query(`create role "${role}" login superuser password ${c.escapeLiteral(DB_PASSWORD)}`));
  const url = new URL(w.t.url);
  url.username = role;
  url.password = DB_PASSWORD;
  const config = parseConfig({
    platform: { baseUrl: w.emu.baseUrl, apiKey: w.emu.apiKey, requestsPerSecond: 100, timeoutMs: 5000 },
    database: { url: url.toString(), schema: 'mirror' },
    lists: w.config.lists,
  });
  const db = createDb({ url: url.toString(), poolMax: 4 });
  return {
    config,
    db,
    async drop() {
      await db.destroy();
      await withDatabase(adminUrl(w.t.url), (c) => c.query(`drop role if exists "${role}"`));
    },
  };
}

/** Pulls the list, edits one row locally and the same item on the platform, pushes: a conflict held open (manual). */
export async function stageConflict(w: World, local = 'Local Co'): Promise<{ itemId: string; conflictId: number; remoteVersion: number }> {
  const list = w.config.lists[0]!;
  await pullList(w.deps(), list);
  const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
  await w.t.db('mirror.orders').where({ id }).update({ customer: local });
  await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Ltd' } });
  const pushed = await pushList(w.deps(), list);
  expect(pushed.conflicts).toBe(1);
  const c = (await w.t.db('listsync.conflicts').where({ item_id: id, status: 'open' }).first()) as { id: string; remote_version: string };
  return { itemId: id, conflictId: Number(c.id), remoteVersion: Number(c.remote_version) };
}

/** The console on any free loopback port; `token: null` starts it without one (loopback clients only). */
export async function consoleOn(w: World, config: Config, db: Knex, token: string | null = CONSOLE_TOKEN): Promise<RunningConsole> {
  return startConsole({ config, db, client: w.client, logger: w.logger, host: '127.0.0.1', port: 0, token: token ?? undefined });
}

/** Every page path of the console for a world with list `orders` and conflict `id`. */
export const consolePaths = (conflictId: number): string[] => [
  '/',
  '/?page=2',
  '/budget',
  '/conflicts',
  `/conflicts/${conflictId}`,
  '/lists/orders',
  '/assets/console.css',
  '/assets/console.js',
  '/no-such-page',
];
