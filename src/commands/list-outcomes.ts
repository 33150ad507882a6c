/**
 * A command over many lists (`pull`, `push`, `reconcile`, `sync`) does every list it can: one
 * list's failure is recorded here and the next list runs. After the last one, a line per list
 * says how it ended (when there was more than one), and the exit code is
 * - a single list: its own code (2 when the operator must fix something, 1 when its run failed);
 * - many lists: 1 when any failed while others were done, the highest code when every one failed
 *   (an API key the platform refuses fails them all: exit 2). (test/many-lists-outcomes.test.ts)
 */
import type { Output } from '../context.js';

export interface ListOutcome {
  list: string;
  /** 0: done (or gave way to a run elsewhere); else the list's own exit code. */
  code: number;
  /** One line: what happened to the list. */
  note: string;
}

export class ListOutcomes {
  private readonly outcomes: ListOutcome[] = [];

  constructor(private readonly job: string) {}

  record(list: string, code: number, note: string): void {
    this.outcomes.push({ list, code, note: firstLine(note) });
  }

  /** Prints the line per list (for more than one) and returns the command's exit code. */
  finish(io: Output): number {
    if (this.outcomes.length > 1) io.out(outcomeLines(this.job, this.outcomes));
    return exitCodeOf(this.outcomes);
  }
}

export function exitCodeOf(outcomes: readonly ListOutcome[]): number {
  const failed = outcomes.filter((o) => o.code !== 0);
  if (failed.length === 0) return 0;
  if (outcomes.length === 1 || failed.length === outcomes.length) return Math.max(...failed.map((o) => o.code));
  return 1;
}

export function outcomeLines(job: string, outcomes: readonly ListOutcome[]): string {
  const failed = outcomes.filter((o) => o.code !== 0).length;
  const width = Math.max(...outcomes.map((o) => o.list.length));
  const head = `${job}: ${outcomes.length - failed} of ${outcomes.length} lists done${failed ? `, ${failed} failed` : ''}`;
  const lines = outcomes.map((o) => `  ${o.list.padEnd(width)}  ${o.code === 0 ? 'done' : 'FAILED'}: ${o.note}`);
  return [head, ...lines].join('\n');
}

const firstLine = (text: string): string => text.split('\n')[0]!.trim();
