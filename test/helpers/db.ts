/**
 * A database of its own for each test file, cloned from the migrated template
 * that global-setup prepared, and dropped afterwards.
 */
import { inject } from 'vitest';
import { createDb, type Knex } from '../../src/db.js';
import { adminUrl, dropDatabase, withDatabase } from './pg-admin.js';

export interface TestDatabase {
  url: string;
  name: string;
  db: Knex;
  drop(): Promise<void>;
}

let counter = 0;

/** Creates a fresh database; `migrated: false` gives an empty one. */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = inject('pgServerUrl');
  const template = inject('pgTemplate');
  const name = `listsync_t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const from = options.migrated === false ? 'template0' : `"${template}"`;
  await withDatabase(adminUrl(serverUrl), (c) => c.query(`create database "${name}" template ${from}`));
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const db = createDb({ url, poolMax: 8 });
  return {
    url,
    name,
    db,
    async drop() {
      await db.destroy();
      await dropDatabase(serverUrl, name);
    },
  };
}
