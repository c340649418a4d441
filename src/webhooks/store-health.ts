import type { Logger } from 'pino';

/**
 * Whether the store failed the dispatcher's last claim, recording or sweep: one warning per outage, and
 * one line when it answers again, not one per attempt. Shared by the parts that call the store.
 */
export class StoreHealth {
  readonly #log: Logger;
  #failing = false;

  constructor(log: Logger) {
    this.#log = log;
  }

  down(err: unknown, message: string): void {
    if (this.#failing) return;
    this.#failing = true;
    this.#log.warn({ err }, message);
  }

  back(): void {
    if (!this.#failing) return;
    this.#failing = false;
    this.#log.info('webhook delivery resumed');
  }
}
