/**
 * An instance's webhook slots (WEBHOOK_CONCURRENCY requests in flight), shared so that no endpoint and
 * no user can hold them all: an attempt starts only while its endpoint, and its endpoint's user (all of
 * that user's endpoints together), hold fewer slots than are left free, and the endpoint fewer than
 * WEBHOOK_ENDPOINT_CONCURRENCY. One receiver that never answers, or one user's several, can take at most
 * half of what is free when they start, and every newcomer finds room: with the default 64 slots, it
 * takes seven users stuck at once before one more has to wait for a timeout. Without this, two endpoints
 * of one user with a backlog held all 64 slots, and every other user's events waited for their timeouts.
 */
export class Slots {
  readonly #total: number;
  readonly #perEndpoint: number;
  #used = 0;
  readonly #byUser = new Map<string, number>();

  constructor(total: number, perEndpoint: number) {
    this.#total = total;
    this.#perEndpoint = perEndpoint;
  }

  /** Slots in use (attempts in flight). */
  get used(): number {
    return this.#used;
  }

  /** No slot is free: nobody starts. */
  get full(): boolean {
    return this.#used >= this.#total;
  }

  /**
   * Whether an endpoint holding `active` slots, of `user`, may start one more: `endpoint` when its own cap
   * stops it (one of its attempts ending frees it), `instance` when the shared slots do (any ending may).
   */
  check(active: number, user: string): 'endpoint' | 'instance' | null {
    if (active >= this.#perEndpoint) return 'endpoint';
    const free = this.#total - this.#used;
    if (free <= 0 || active >= free || (this.#byUser.get(user) ?? 0) >= free) return 'instance';
    return null;
  }

  take(user: string): void {
    this.#used++;
    this.#byUser.set(user, (this.#byUser.get(user) ?? 0) + 1);
  }

  give(user: string): void {
    this.#used--;
    const left = (this.#byUser.get(user) ?? 1) - 1;
    if (left > 0) this.#byUser.set(user, left);
    else this.#byUser.delete(user);
  }
}
