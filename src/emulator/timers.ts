/**
 * Sleeps that `close()` can cancel, so a stopped emulator leaves no pending
 * timers behind (a cancelled sleep never resolves).
 */
export class TimerSet {
  private readonly pending = new Set<NodeJS.Timeout>();
  private closed = false;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return;
      const t = setTimeout(
        () => {
          this.pending.delete(t);
          resolve();
        },
        Math.max(0, ms),
      );
      this.pending.add(t);
    });
  }

  clearAll(): void {
    this.closed = true;
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
  }
}
