/**
 * The emulator's clock for Created/Modified of new changes. Defaults to the
 * real time (or the injected `now`), and can be pinned through the admin API.
 */
export class EmulatorClock {
  private pinned: Date | null = null;
  private readonly base: () => Date;

  constructor(base?: () => Date) {
    this.base = base ?? (() => new Date());
  }

  now(): Date {
    return this.pinned === null ? this.base() : new Date(this.pinned.getTime());
  }

  nowMs(): number {
    return this.now().getTime();
  }

  pin(at: Date | null): void {
    this.pinned = at === null ? null : new Date(at.getTime());
  }

  get isPinned(): boolean {
    return this.pinned !== null;
  }
}
