import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { emulatorOptionsFromCli, parseActivitySpec, registerEmulatorCommand } from '../../src/emulator/command.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { type Envelope, call } from './helpers.js';

function program(waitForStop?: (emu: RunningEmulator) => Promise<string>): { p: Command; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const p = new Command('listsync').exitOverride().configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => err.push(s) });
  registerEmulatorCommand(p, waitForStop ? { waitForStop } : {});
  return { p, out, err };
}

describe('listsync emulator (command line)', () => {
  it('starts, prints the base URL, key and admin URL, serves, and stops', async () => {
    let seen: Envelope | undefined;
    const { p, out } = program(async (emu) => {
      seen = (await call<Envelope>(emu, 'GET', '/lists/demo/orders')).json;
      return 'test';
    });
    await p.parseAsync(['node', 'listsync', 'emulator', '--port', '0', '--items', '25', '--no-rate-limit', '--time-zone', 'Europe/Berlin']);
    const text = out.join('');
    expect(text).toMatch(/API base URL {2}http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(text).toContain('emulator-key');
    expect(text).toMatch(/\/_admin/);
    expect(text).toContain('test: stopping');
    expect(seen).toMatchObject({ Status: 0, Data: { ItemCount: 25 } });
    expect(text).toMatch(/time zone {5}Europe\/Berlin/);
    expect(text).toMatch(/demo\/orders {2}appID=demo listID=orders {2}25 items {2}"Orders"/);
    expect(text).toMatch(/field meta {4}exported {3}query lag 0 ms/);
  });

  it('applies --field-meta, --query-lag and --reference-date, and the banner says so', async () => {
    let fields: Envelope<Array<Record<string, unknown>>> | undefined;
    const { p, out } = program(async (emu) => {
      fields = (await call<Envelope<Array<Record<string, unknown>>>>(emu, 'GET', '/lists/demo/orders/fields')).json;
      return 'test';
    });
    await p.parseAsync([
      'node',
      'listsync',
      'emulator',
      '--port',
      '0',
      '--items',
      '3',
      '--no-rate-limit',
      '--field-meta',
      'control-only',
      '--query-lag',
      '1500',
      '--reference-date',
      '2026-01-15',
    ]);
    const text = out.join('');
    expect(text).toMatch(/field meta {4}control-only {3}query lag 1500 ms/);
    expect(text).toMatch(/data as of {4}2026-01-15/);
    expect(text).toMatch(/time zone {5}UTC/);
    expect(fields!.Data.find((f) => f['FieldName'] === 'Text3')).toEqual(expect.objectContaining({ DisplayName: 'Status', Type: 'radio' }));
    expect(fields!.Data.every((f) => !('FieldType' in f))).toBe(true);
  });

  it('--api-key: /v1 takes that key and refuses the default one with 401; the banner prints it', async () => {
    const answers: number[] = [];
    const { p, out } = program(async (emu) => {
      for (const apiKey of ['my-test-key-7', 'emulator-key'])
        answers.push((await call(emu, 'GET', '/lists/demo/orders', undefined, { apiKey })).status);
      return 'test';
    });
    await p.parseAsync(['node', 'listsync', 'emulator', '--port', '0', '--items', '3', '--no-rate-limit', '--api-key', 'my-test-key-7']);
    expect(answers).toEqual([200, 401]);
    expect(out.join('')).toMatch(/API key {7}my-test-key-7 /);
  });

  it('rejects invalid option values with exit code 2 and a clear message', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--port', 'abc'], /--port/],
      [['--error-rate', '1.5'], /fraction/],
      [['--time-zone', 'Nowhere/City'], /time zone/],
      [['--activity', 'demo-orders'], /appID\/listID/],
      [['--activity', 'demo/orders:edits=-1'], /edits/],
      [['--rate-limit', '0'], /per second/],
      [['--field-meta', 'sideways'], /exported, swapped, type-only, control-only/],
      [['--query-lag', '-5'], /whole number/],
      [['--reference-date', '2026-02-30'], /YYYY-MM-DD/],
      [['--api-key', 'has space'], /without spaces/],
    ];
    for (const [args, message] of cases) {
      const { p, err } = program(async () => 'never');
      const e = await p.parseAsync(['node', 'listsync', 'emulator', ...args]).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e, args.join(' ')).toBeInstanceOf(CommanderError);
      expect((e as CommanderError).exitCode).toBe(2);
      expect(err.join('')).toMatch(message);
    }
  });

  it('a bad seed file is a usage error (exit code 2)', async () => {
    const { p, err } = program(async () => 'never');
    const e = await p
      .parseAsync(['node', 'listsync', 'emulator', '--port', '0', '--seed', '/nonexistent/seed.json'])
      .catch((x: unknown) => x);
    expect((e as CommanderError).exitCode).toBe(2);
    expect(err.join('')).toMatch(/Cannot read the seed file/);
  });

  it('parses activity specs and maps options', () => {
    expect(parseActivitySpec('demo/orders:edits=5,creates=1,deletes=0.5,hooks=1')).toEqual({
      appID: 'demo',
      listID: 'orders',
      editsPerSecond: 5,
      createsPerSecond: 1,
      deletesPerSecond: 0.5,
      hookEvents: true,
    });
    expect(parseActivitySpec('a/b')).toEqual({ appID: 'a', listID: 'b', editsPerSecond: 1 });
    expect(emulatorOptionsFromCli({ port: 4010, host: '127.0.0.1', rateLimit: 5, latency: 20, seed: 'x.json' })).toMatchObject({
      port: 4010,
      seedFile: 'x.json',
      sample: false,
      rateLimit: { burst: 5, perSecond: 5 },
      faults: { latencyMs: 20 },
    });
    expect(emulatorOptionsFromCli({ port: 1, host: 'h', rateLimit: false }).sample).toBe(true);
  });
});
