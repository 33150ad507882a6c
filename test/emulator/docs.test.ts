import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../src/emulator/admin.js';
import { FIELD_META_ARRANGEMENTS, parseSeedFile } from '../../src/emulator/index.js';

/** The README's "The emulator" section, checked against the emulator so the two cannot drift. */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const section = readme.slice(readme.indexOf('## The emulator'), readme.indexOf('\n## ', readme.indexOf('## The emulator') + 1));

describe('README, "The emulator"', () => {
  it('its seed example is a valid seed file', () => {
    const json = /```json\n([\s\S]*?)```/.exec(section);
    expect(json, 'a ```json block').not.toBeNull();
    expect(() => parseSeedFile(JSON.parse(json![1]!), 'README')).not.toThrow();
  });

  it('documents every admin route and every field-metadata arrangement', () => {
    for (const route of ADMIN_ROUTES) {
      const [methods = '', path = ''] = route.split(' ');
      const documented = path.replace(/\?.*$/, '');
      // Table cells escape the pipe: GET\|PUT /_admin/faults
      expect(section, route).toContain(`${methods.replaceAll('|', '\\|')} ${documented}`);
    }
    for (const a of FIELD_META_ARRANGEMENTS) expect(section).toContain(`\`${a}\``);
    for (const option of ['--field-meta', '--query-lag', '--reference-date', '/healthz']) expect(section).toContain(option);
  });
});
