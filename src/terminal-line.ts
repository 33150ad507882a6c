/**
 * The terminal's current line. A progress bar draws on a line it has not ended (so it can redraw
 * it in place); anything else written to the terminal (a log line, an error, a signal notice, a
 * summary) first calls `beginLine()`, which ends the bar's line, so no line is ever printed onto
 * a bar (`… ETA 15s05:14:55 ERROR …`). The bar's next draw starts on a line of its own.
 * (test/terminal-failure.test.ts)
 */

let endOpenLine: (() => void) | undefined;

/** A bar has drawn without ending its line: `end` writes the newline that ends it. */
export function lineLeftOpen(end: () => void): void {
  endOpenLine = end;
}

/** The bar ended its line itself. */
export function lineEnded(): void {
  endOpenLine = undefined;
}

/** Before writing a line to the terminal: ends a bar's line left open. */
export function beginLine(): void {
  const end = endOpenLine;
  endOpenLine = undefined;
  end?.();
}
