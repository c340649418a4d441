/** Due times beyond this many are left to the poll (at most a poll interval late). */
const MAX_TIMES = 10_000;

/**
 * Calls `wake` at each time it is told of (epoch ms), earliest first, on one timer: the dispatcher claims
 * a retry when it comes due instead of at the next poll after it. The poll alone made every retry up to a
 * poll interval late, and a retry claimed at an unlucky poll then waited for its place behind whatever
 * else was due; the poll stays for what this instance cannot know of (other instances' events, expired
 * claims).
 */
export class DueTimer {
  readonly #wake: () => void;
  /** A binary min-heap of due times. */
  readonly #heap: number[] = [];
  #timer: NodeJS.Timeout | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(wake: () => void) {
    this.#wake = wake;
  }

  add(at: number): void {
    if (this.#stopped || this.#heap.length >= MAX_TIMES) return;
    const heap = this.#heap;
    heap.push(at);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (heap[parent]! <= heap[i]!) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
    if (at < this.#armedFor) this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#heap.length = 0;
  }

  #arm(): void {
    clearTimeout(this.#timer);
    const next = this.#heap[0];
    if (next === undefined) {
      this.#armedFor = Number.POSITIVE_INFINITY;
      this.#timer = undefined;
      return;
    }
    this.#armedFor = next;
    // Within what a timer can hold (about 24 days; retry delays are far shorter).
    this.#timer = setTimeout(() => this.#fire(), Math.min(2 ** 31 - 1, Math.max(0, next - Date.now())));
    this.#timer.unref();
  }

  #fire(): void {
    const now = Date.now();
    while (this.#heap.length > 0 && this.#heap[0]! <= now) this.#pop();
    this.#arm();
    this.#wake();
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && heap[l]! < heap[m]!) m = l;
      if (r < heap.length && heap[r]! < heap[m]!) m = r;
      if (m === i) break;
      [heap[m], heap[i]] = [heap[i]!, heap[m]!];
      i = m;
    }
  }
}
