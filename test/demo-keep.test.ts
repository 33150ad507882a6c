/** `listsync demo --keep` leaves the emulator and database running, and the commands it prints work as printed. */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { BIN, childEnv, runCli } from './helpers/cli.js';

// In this file because every demo on one server uses the database listsync_demo: the files' tests must not overlap.
describe('demo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'listsync-demo-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the promise it shows: no 429 and no retry, and a first load counts each row once', async () => {
    const r = await runCli(['demo', '--items', '2500'], { cwd: dir, env: { DATABASE_URL: inject('pgServerUrl') } });
    const out = r.stdout + r.stderr;
    expect(r.code, out).toBe(0);
    expect(out).not.toMatch(/rate limit hit|pausing requests|too many requests|42900/i);
    for (const m of out.matchAll(/(\d+) retr(?:y|ies)/g)) expect(m[1], m[0]).toBe('0');
    expect(out).toMatch(/full load\) — 3 pages, \d+ requests, 0 retries; rows inserted 2,500, updated 0, unchanged 0,/);
  }, 180_000);
});

describe('demo --keep', () => {
  const dir = mkdtempSync(join(tmpdir(), 'listsync-demo-keep-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints LISTSYNC_CONFIG and commands that work against the running demo, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'demo', '--keep', '--items', '120'], {
      cwd: dir,
      env: childEnv({ DATABASE_URL: inject('pgServerUrl') }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const configPath = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /export LISTSYNC_CONFIG=(\S+)/.exec(out);
        if (m && out.includes('until you press Ctrl-C')) resolve(m[1]!);
      });
      child.on('close', (code) => reject(new Error(`demo ended (${code}) before printing the instructions:\n${out}`)));
    });
    expect(out).toContain('npm run listsync -- status');
    expect(out).not.toContain('npx listsync');
    // The console, on this machine only: its address is printed and its overview lists the demo's list.
    const consoleUrl = /console on (http:\/\/127\.0\.0\.1:\d+) \(this machine only/.exec(out)?.[1];
    expect(consoleUrl, out).toBeDefined();
    const overview = await fetch(`${consoleUrl}/`);
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('<a href="/lists/orders">orders</a>');
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      const status = await runCli(['status'], { cwd: dir, env: { LISTSYNC_CONFIG: configPath } });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^orders\s/m);
      const pull = await runCli(['pull'], { cwd: dir, env: { LISTSYNC_CONFIG: configPath } });
      expect(pull.code, pull.stderr).toBe(0);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 180_000);
});

describe('demo --keep on its embedded PostgreSQL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'listsync-demo-keep-embedded-'));
  // The embedded server runs as the postgres OS user when the tests run as root.
  chmodSync(dir, 0o755);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stops cleanly on Ctrl-C at a terminal (the whole process group, server included, gets SIGINT)', async () => {
    const child = spawn(process.execPath, [BIN, 'demo', '--keep', '--items', '60'], {
      cwd: dir,
      env: childEnv({ DATABASE_URL: undefined }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('until you press Ctrl-C')) resolve();
      });
      child.on('close', (code) => reject(new Error(`demo ended (${code}) before it was ready:\n${out}${err}`)));
    });
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited, out + err).toBe(0);
    expect(out).toContain('demo: stopping the emulator and the database');
    expect(err).not.toMatch(/57P01|Unhandled|terminating connection|at .*\.js:\d+/);
  }, 180_000);
});
