/**
 * `serve` says where it listens as it is bound: a listener on every interface (0.0.0.0, the default
 * serve.host) is announced as such, never as the loopback address it is not limited to, with the
 * URL this machine reaches it at (src/commands/serve-banner.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveBanner } from '../src/commands/serve-banner.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('the serve banner', () => {
  it('names the bound address, and where this machine reaches it', () => {
    expect(serveBanner({ address: '0.0.0.0', family: 'IPv4', port: 8080 }, '/hooks/')).toBe(
      'listsync serve on http://0.0.0.0:8080 (every IPv4 interface; from this machine http://127.0.0.1:8080; ' +
        'healthz: http://127.0.0.1:8080/healthz, metrics: http://127.0.0.1:8080/metrics, webhooks: http://127.0.0.1:8080/hooks/<token>)',
    );
    expect(serveBanner({ address: '::', family: 'IPv6', port: 8080 }, '/hooks/')).toMatch(
      /^listsync serve on http:\/\/\[::\]:8080 \(every interface; from this machine http:\/\/\[::1\]:8080; healthz: http:\/\/\[::1\]:8080\/healthz/,
    );
    expect(serveBanner({ address: '127.0.0.1', family: 'IPv4', port: 9000 }, '/hooks/')).toBe(
      'listsync serve on http://127.0.0.1:9000 (healthz: http://127.0.0.1:9000/healthz, metrics: http://127.0.0.1:9000/metrics, webhooks: http://127.0.0.1:9000/hooks/<token>)',
    );
  });

  describe('through the CLI', () => {
    let w: World;
    beforeAll(async () => {
      w = await startWorld({ emulator: { items: 5 } });
    }, 60_000);
    afterAll(async () => w?.close());

    const serve = (config: string) =>
      runCli(['--config', config, 'serve', '--port', '0'], {
        cwd: w.cwd,
        env: { PLATFORM_API_KEY: w.emu.apiKey },
        stopOn: /listsync serve on /,
      });

    it('serve on the default host (0.0.0.0) says every interface, not 127.0.0.1', async () => {
      const r = await serve(w.configFile);
      expect(r.code, r.stderr).toBe(0);
      const m = /listsync serve on http:\/\/0\.0\.0\.0:(\d+) \(every IPv4 interface; from this machine http:\/\/127\.0\.0\.1:(\d+);/.exec(
        r.stdout,
      );
      expect(m, r.stdout).not.toBeNull();
      expect(m![2]).toBe(m![1]);
      expect(r.stdout).not.toMatch(/listsync serve on http:\/\/127\.0\.0\.1/);
    });

    it('serve on serve.host 127.0.0.1 says that address', async () => {
      const raw = JSON.parse(readFileSync(w.configFile, 'utf8')) as { serve: Record<string, unknown> };
      const file = join(w.cwd, 'loopback.json');
      writeFileSync(file, JSON.stringify({ ...raw, serve: { ...raw.serve, host: '127.0.0.1' } }));
      const r = await serve(file);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/listsync serve on http:\/\/127\.0\.0\.1:\d+ \(healthz: http:\/\/127\.0\.0\.1:\d+\/healthz/);
    });
  });
});
