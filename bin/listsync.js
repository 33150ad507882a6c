#!/usr/bin/env node
// An installed package runs its compiled code (dist/); a clone runs the TypeScript sources through
// tsx, so an edit takes effect without a build. LISTSYNC_RUN_DIST=1 runs dist/ from a clone too
// (after `npm run build`), as an installed package would.
// The entry point composes the program: src/main's run gets the jobs serve schedules from jobs/index
// (jobs/ is built on src/, and nothing in src/ imports it).
import { existsSync } from 'node:fs';

const compiled = { main: new URL('../dist/src/main.js', import.meta.url), jobs: new URL('../dist/jobs/index.js', import.meta.url) };
const sources = { main: new URL('../src/main.ts', import.meta.url), jobs: new URL('../jobs/index.ts', import.meta.url) };

let modules = sources;
if (!existsSync(sources.main) || process.env.LISTSYNC_RUN_DIST === '1') {
  if (!existsSync(compiled.main)) {
    console.error('listsync: dist/src/main.js is missing; run "npm run build" first');
    process.exit(2);
  }
  modules = compiled;
} else {
  const { register } = await import('tsx/esm/api');
  register();
}
const [{ run }, { jobs }] = await Promise.all([import(modules.main.href), import(modules.jobs.href)]);
await run(process.argv, jobs);
