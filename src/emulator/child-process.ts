/**
 * `listsync emulator` in a process of its own: its event loop, heap and
 * garbage collections are not the caller's. A test or benchmark that measures
 * a rate limit needs that: the emulator counts a request when its handler
 * runs, and a handler held back by the caller's own work (a major collection
 * of a big heap, a page being parsed) counts several requests at once, as no
 * real platform would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EmulatorAdminClient } from './admin-client.js';

export interface EmulatorProcess {
  /** The /v1 base URL. */
  baseUrl: string;
  apiKey: string;
  /** The admin API's URL (…/_admin). */
  adminUrl: string;
  admin: EmulatorAdminClient;
  child: ChildProcess;
  /** SIGTERM, then resolves when the process has exited. */
  stop(): Promise<void>;
}

/** Most time the emulator may take to print its banner (it builds its lists first). */
const READY_TIMEOUT_MS = 60_000;

/**
 * Starts `node <bin> emulator --port 0 <args>` and resolves once its banner
 * names the base URL, the key and the admin API. `bin` is a `bin/listsync.js`.
 */
export async function startEmulatorProcess(bin: string, args: readonly string[] = []): Promise<EmulatorProcess> {
  const child = spawn(process.execPath, [bin, 'emulator', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  // What it says on stderr, its last 64 KiB, for the error when it fails to start.
  child.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-65_536)));
  const info = await new Promise<{ baseUrl: string; apiKey: string; adminUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the emulator printed no banner within ${READY_TIMEOUT_MS} ms: ${out}${err}`));
    }, READY_TIMEOUT_MS);
    const onBanner = (d: Buffer): void => {
      out += d.toString();
      const base = /API base URL\s+(\S+)/.exec(out);
      const key = /API key\s+(\S+)/.exec(out);
      const admin = /admin API\s+(\S+)/.exec(out);
      if (base && key && admin) {
        clearTimeout(timer);
        child.stdout!.off('data', onBanner);
        resolve({ baseUrl: base[1]!, apiKey: key[1]!, adminUrl: admin[1]! });
      }
    };
    child.stdout!.on('data', onBanner);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the emulator exited with ${code}: ${out}${err}`));
    });
  });
  // Read and dropped from here on: a full pipe would stall the emulator.
  child.stdout!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    ...info,
    admin: new EmulatorAdminClient(info.adminUrl.replace(/\/_admin$/, '')),
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
