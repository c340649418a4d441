import type { Logger } from 'pino';
import type { AttemptResult, ClaimedDelivery, ClaimRequest } from '../../domain/webhook.js';
import type Database from './driver.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';
import type { SqliteWebhookStatements } from './webhook-statements.js';
import type { Dialect } from '../sql/dialect.js';
import { backlogOf, type BacklogRow } from '../sql/statements.js';
import type { OutboxStore, WebhookBacklog } from '../store.js';

/** Webhook bookkeeping: losing it to a power cut only repeats a delivery (see WriteQueue.add). */
const NOT_DURABLE = { durable: false } as const;

/**
 * Who is told after a batch that queued webhook events is committed and synced (see
 * OutboxStore.onEventsQueued): `tell` is the write queue's after-commit callback (WriteQueue.afterCommit).
 */
export class EventsListener {
  #listener: (() => void) | undefined;
  readonly #logger: Logger | undefined;

  constructor(logger: Logger | undefined) {
    this.#logger = logger;
  }

  set(listener: () => void): void {
    this.#listener = listener;
  }

  /** Tells the listener; its failure is not the batch's. */
  readonly tell = (): void => {
    try {
      this.#listener?.();
    } catch (error) {
      // The listener only hurries the dispatcher, which polls anyway; it must not break the write queue.
      this.#logger?.error({ err: error }, 'the webhook events listener failed');
    }
  };
}

/** The outbox on SQLite: one server per store claims, so no row locks; its bookkeeping is not durable. */
export class SqliteOutbox implements OutboxStore {
  readonly #db: Database.Database;
  readonly #d: Dialect;
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  readonly #events: EventsListener;
  readonly #backlogText: string;
  /** Prepared on first use: only a server with metrics on asks. */
  #backlog: Database.Statement<[number], BacklogRow> | undefined;

  constructor(
    db: Database.Database, d: Dialect, state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements, events: EventsListener, backlog: string,
  ) {
    this.#db = db;
    this.#d = d;
    this.#state = state;
    this.#writes = writes;
    this.#webhooks = webhooks;
    this.#events = events;
    this.#backlogText = backlog;
  }

  onEventsQueued(listener: () => void): void {
    this.#events.set(listener);
  }

  claimDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]> {
    return this.#writes.add(() => this.#webhooks.claim(request, Date.now()), NOT_DURABLE);
  }

  async recordAttempts(instance: string, results: readonly AttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    await this.#writes.add(() => this.#webhooks.record(instance, results, Date.now()), NOT_DURABLE);
  }

  async releaseDeliveries(instance: string, deliveries: readonly ClaimedDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.#writes.add(() => this.#webhooks.release(instance, deliveries, Date.now()), NOT_DURABLE);
  }

  sweepWebhooks(before: Date): Promise<number> {
    return this.#writes.add(() => this.#webhooks.sweep(before.getTime(), Date.now()), NOT_DURABLE);
  }

  async webhookBacklog(cap: number): Promise<WebhookBacklog> {
    return this.#state.read(() => backlogOf(this.#d, (this.#backlog ??= this.#db.prepare(this.#backlogText)).get(cap), cap));
  }
}

/** Server start only (see SqliteWebhookStatements.releaseOrphans): a crash's claims are due again at once. */
export async function releaseOrphanedClaims(writes: WriteQueue, webhooks: SqliteWebhookStatements, state: FileState): Promise<void> {
  // A store that cannot be written now (said already by the probe) keeps them until their lease ends.
  const released = await writes.add(() => webhooks.releaseOrphans(Date.now()), NOT_DURABLE).catch(() => 0);
  if (released > 0) state.file.logger?.info({ events: released }, 'webhook events claimed before the last stop are due again');
}
