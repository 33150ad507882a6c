/**
 * Rewrites the generated block of docs/commands.md from the live `--help` of
 * every command (npm run docs:commands). test/docs.test.ts compares the block
 * with the live output, so a command or option added anywhere shows up as a
 * failing test until this is run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli.js';
import type { Output } from '../src/context.js';

export const COMMANDS_DOC = fileURLToPath(new URL('../docs/commands.md', import.meta.url));
const BEGIN = '<!-- BEGIN GENERATED: the --help of every command; rewrite with `npm run docs:commands` -->';
const END = '<!-- END GENERATED -->';
/** Help is wrapped at a fixed width, so the block does not depend on the terminal it was made in. */
const HELP_WIDTH = 100;

/** Every command's full name and its `--help` text, the program first, then depth first in definition order. */
export function commandHelps(): { name: string; help: string }[] {
  const silent: Output = { out: () => undefined, err: () => undefined, isTTY: false };
  // The help text does not depend on the jobs serve schedules.
  const program = buildProgram(silent, () => undefined, []);
  const all: { name: string; help: string }[] = [];
  const visit = (command: Command, prefix: string): void => {
    const name = prefix ? `${prefix} ${command.name()}` : command.name();
    command.configureHelp({ ...command.configureHelp(), helpWidth: HELP_WIDTH });
    all.push({ name, help: command.helpInformation().trimEnd() });
    for (const sub of command.commands) visit(sub, name);
  };
  visit(program, '');
  return all;
}

/** The generated block's contents: one section per command with its help. */
export function renderCommandsBlock(): string {
  return commandHelps()
    .map(({ name, help }) => `### \`${name}\`\n\n\`\`\`text\n${help}\n\`\`\``)
    .join('\n\n');
}

/** The text between the markers of `doc`, or undefined without them. */
export function generatedBlock(doc: string): string | undefined {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start === -1 || end < start) return undefined;
  return doc.slice(start + BEGIN.length, end).trim();
}

export function withGeneratedBlock(doc: string, block: string): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start === -1 || end < start) throw new Error(`${COMMANDS_DOC} lacks the markers ${BEGIN} ... ${END}`);
  return `${doc.slice(0, start + BEGIN.length)}\n\n${block}\n\n${doc.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const doc = readFileSync(COMMANDS_DOC, 'utf8');
  const next = withGeneratedBlock(doc, renderCommandsBlock());
  if (next === doc) console.log(`${COMMANDS_DOC} is up to date`);
  else {
    writeFileSync(COMMANDS_DOC, next);
    console.log(`${COMMANDS_DOC}: the generated block rewritten (${commandHelps().length} commands)`);
  }
}
