/** Shared by the benchmarks: a database of their own, a world (emulator + config + client), an emulator in a child process. */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parseConfig, type Config } from '../src/config.js';
import { createClient } from '../src/context.js';
import { startEmulatorProcess, type EmulatorProcess } from '../src/emulator/child-process.js';
import { createDb, migrateLatest, type Knex } from '../src/db.js';
import { silentLogger } from '../src/logger.js';
import type { PlatformClient } from '../src/platform/client.js';

export const serverUrl = (): string =>
  process.env.BENCH_DATABASE_URL ??
  process.env.DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDb {
  url: string;
  db: Knex;
  drop(): Promise<void>;
}

/** A fresh, migrated database on the bench server, dropped afterwards. */
export async function benchDatabase(tag: string): Promise<BenchDb> {
  const name = `listsync_bench_${tag}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(serverUrl());
  u.pathname = `/${name}`;
  const db = createDb({ url: u.toString(), poolMax: 8 });
  await migrateLatest(db);
  return {
    url: u.toString(),
    db,
    async drop() {
      await db.destroy();
      const a = new pg.Client({ connectionString: serverUrl() });
      await a.connect();
      await a.query(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

export function benchConfig(
  baseUrl: string,
  apiKey: string,
  dbUrl: string,
  platform: Record<string, unknown> = {},
  list: Record<string, unknown> = {},
  database: Record<string, unknown> = {},
): Config {
  return parseConfig({
    platform: { baseUrl, apiKey, ...platform },
    database: { url: dbUrl, schema: 'mirror', ...database },
    lists: [{ name: 'orders', appID: 'demo', listID: 'orders', ...list }],
  });
}

export function benchClient(config: Config, db: Knex): PlatformClient {
  return createClient(config, silentLogger(), db);
}

const BIN = fileURLToPath(new URL('../bin/listsync.js', import.meta.url));

/** `listsync emulator` in a child process, so its memory and event loop are not the benchmark's. */
export function emulatorProcess(args: string[]): Promise<EmulatorProcess> {
  return startEmulatorProcess(BIN, args);
}

export const mb = (bytes: number): number => Math.round(bytes / 1024 / 1024);
