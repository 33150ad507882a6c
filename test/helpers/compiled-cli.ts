/**
 * The `listsync` the CLI tests run: the program compiled once per test run,
 * laid out as an installed package is (`bin/listsync.js`, `dist/src`,
 * `dist/jobs`, `dist/migrations/sql`, `package.json`), under the repository's
 * `node_modules/.cache` so that it resolves the same dependencies. A process
 * of it starts in about half the CPU time of one that compiles the sources
 * through tsx, and the suite starts hundreds. It is also what users run.
 * The sources' own path (a clone's `bin/listsync.js` through tsx) keeps a
 * test of its own (test/cli-foundation.test.ts).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface CompiledCli {
  /** The compiled package's `bin/listsync.js`. */
  bin: string;
  remove(): void;
}

/** Compiles src/ and jobs/ (tsconfig.build.json) into a package of its own for this run. */
export async function buildCompiledCli(): Promise<CompiledCli> {
  const root = join(REPO, 'node_modules', '.cache', 'listsync-test-cli', `run-${process.pid}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, 'bin'), { recursive: true });
  const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', join(REPO, 'tsconfig.build.json'), '--outDir', join(root, 'dist')]);
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`compiling listsync for the CLI tests failed:\n${stdout ?? ''}${stderr ?? ''}`, { cause: err });
  }
  cpSync(join(REPO, 'migrations', 'sql'), join(root, 'dist', 'migrations', 'sql'), { recursive: true });
  copyFileSync(join(REPO, 'bin', 'listsync.js'), join(root, 'bin', 'listsync.js'));
  copyFileSync(join(REPO, 'package.json'), join(root, 'package.json'));
  return { bin: join(root, 'bin', 'listsync.js'), remove: () => rmSync(root, { recursive: true, force: true }) };
}
