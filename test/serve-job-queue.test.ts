/** serve's queue: at most `workers` at once, one run per lock scope, scheduled fires coalesced with their reason, early requests joined. */
import { describe, expect, it } from 'vitest';
import { createJobQueue, type QueueEntry } from '../src/serve/job-queue.js';

function harness(workers: number) {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const coalesced: string[] = [];
  const queue = createJobQueue<string>({
    workers,
    execute: (e: QueueEntry<string>) =>
      new Promise<unknown>((resolve) => {
        started.push(e.key);
        finish.set(e.key, () => resolve(`${e.key} done`));
      }),
    onCoalesced: (e, reason) => coalesced.push(`${e.key}: ${reason}`),
  });
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { queue, started, finish, coalesced, settle };
}

describe('job queue', () => {
  it('runs at most `workers` at once, oldest first, never two of one scope together', async () => {
    const h = harness(2);
    void h.queue.offer('pull:a', 'list:a', 'a', 'schedule');
    void h.queue.offer('push:a', 'list:a', 'a', 'schedule');
    void h.queue.offer('pull:b', 'list:b', 'b', 'schedule');
    void h.queue.offer('pull:c', 'list:c', 'c', 'schedule');
    expect(h.started).toEqual(['pull:a', 'pull:b']);
    expect(h.queue.queued).toBe(2);
    h.finish.get('pull:a')!();
    await h.settle();
    expect(h.started).toEqual(['pull:a', 'pull:b', 'push:a']);
    h.finish.get('pull:b')!();
    await h.settle();
    expect(h.started.at(-1)).toBe('pull:c');
  });

  it('a scheduled fire of a job still queued or running is coalesced with the reason, never stacked', async () => {
    const h = harness(1);
    void h.queue.offer('pull:a', 'list:a', 'a', 'schedule');
    void h.queue.offer('pull:b', 'list:b', 'b', 'schedule');
    expect(await h.queue.offer('pull:a', 'list:a', 'a', 'schedule')).toBeUndefined();
    expect(await h.queue.offer('pull:b', 'list:b', 'b', 'schedule')).toBeUndefined();
    expect(h.coalesced).toEqual([
      'pull:a: coalesced: the previous run is still running',
      'pull:b: coalesced: the previous fire is still queued',
    ]);
    expect(h.queue.queued).toBe(1);
  });

  it('an early request joins the queued run, or asks for one more after the running one', async () => {
    const h = harness(1);
    const first = h.queue.offer('pull:a', 'list:a', 'a', 'request');
    void h.queue.offer('pull:a', 'list:a', 'a', 'request');
    void h.queue.offer('pull:a', 'list:a', 'a', 'request');
    h.finish.get('pull:a')!();
    expect(await first).toBe('pull:a done');
    await h.settle();
    expect(h.started).toEqual(['pull:a', 'pull:a']);
    expect(h.coalesced).toEqual([]);
  });

  it('drain drops what is queued and hands it back; idle waits for the running', async () => {
    const h = harness(1);
    void h.queue.offer('pull:a', 'list:a', 'a', 'schedule');
    const dropped = h.queue.offer('pull:b', 'list:b', 'b', 'schedule');
    expect(h.queue.drain().map((e) => e.key)).toEqual(['pull:b']);
    expect(await dropped).toBeUndefined();
    let idle = false;
    void h.queue.idle().then(() => (idle = true));
    await h.settle();
    expect(idle).toBe(false);
    h.finish.get('pull:a')!();
    await h.settle();
    expect(idle).toBe(true);
    expect(h.started).toEqual(['pull:a']);
  });
});
