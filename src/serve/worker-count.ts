/**
 * Jobs one serve process runs at once (serve.workers), by default sized to a
 * pool of `poolMax` connections: a run may use two at once (a page's
 * transaction beside the shared request budget or the next page's read), and
 * three stay for /healthz, /metrics, the receiver and the applier. Each slot
 * also holds one connection of the lock pool while its run holds its lock.
 */
export function workerCount(poolMax: number, asked?: number): number {
  return asked ?? Math.max(1, Math.floor((poolMax - 3) / 2));
}
