import type { RateCount } from '../store.js';

/**
 * Fixed-window counters in memory. Exact for a store only one process serves (SQLite, under the
 * server lock); PostgreSQL keeps its counters in the database so that instances share them.
 */
export class MemoryRateCounter {
  readonly #windows = new Map<string, { end: number; count: number }>();
  #sweptAt = 0;

  hit(key: string, windowMs: number, now = Date.now()): RateCount {
    const end = now - (now % windowMs) + windowMs;
    const current = this.#windows.get(key);
    const window = current && current.end === end ? current : { end, count: 0 };
    window.count++;
    this.#windows.set(key, window);
    if (now - this.#sweptAt > 60_000) this.#sweep(now);
    return { count: window.count, resetInMs: end - now };
  }

  /** Forgets windows that have ended, so keys seen once do not accumulate. */
  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [key, w] of this.#windows) if (w.end <= now) this.#windows.delete(key);
  }
}
