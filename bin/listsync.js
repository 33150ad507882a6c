#!/usr/bin/env node
// An installed package runs its compiled code (dist/); a clone runs the TypeScript sources through
// tsx, so an edit takes effect without a build. LISTSYNC_RUN_DIST=1 runs dist/ from a clone too
// (after `npm run build`), as an installed package would.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/src/main.js', import.meta.url);
const sources = new URL('../src/main.ts', import.meta.url);

if (!existsSync(sources) || process.env.LISTSYNC_RUN_DIST === '1') {
  if (!existsSync(compiled)) {
    console.error('listsync: dist/src/main.js is missing; run "npm run build" first');
    process.exit(2);
  }
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(sources.href);
}
