/** Runs the real `listsync` binary in a child process: the program compiled for this test run (compiled-cli.ts). */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

/** A clone's `bin/listsync.js`, which runs the TypeScript sources through tsx. */
export const SOURCE_BIN = fileURLToPath(new URL('../../bin/listsync.js', import.meta.url));

/** The compiled program's `bin/listsync.js`, as an installed package has it. */
export const BIN = inject('cliBin');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Send `stopWith` (default SIGTERM) once stdout or stderr matches: for commands that run until stopped. */
  stopOn?: RegExp;
  stopWith?: NodeJS.Signals;
  /** The `bin/listsync.js` to run (default BIN, the compiled program). */
  bin?: string;
}

/** Environment for the child: the parent's minus anything that would leak config in. */
export function childEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    LISTSYNC_CONFIG: undefined,
    DATABASE_URL: undefined,
    PLATFORM_API_KEY: undefined,
    LISTSYNC_LOG_LEVEL: 'warn',
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.bin ?? BIN, ...args], {
      cwd: options.cwd,
      env: childEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let stopped = false;
    const maybeStop = () => {
      if (stopped || !options.stopOn?.test(stdout + stderr)) return;
      stopped = true;
      child.kill(options.stopWith ?? 'SIGTERM');
    };
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      maybeStop();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      maybeStop();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
