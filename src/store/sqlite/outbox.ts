import type {
  AttemptResult, ClaimedDelivery, ClaimRequest, DeliveryAttempt, NewWebhookEndpoint, WebhookChange, WebhookEndpoint,
} from '../../domain/webhook.js';
import type Database from './driver.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';
import type { SqliteWebhookOperations } from './webhook-operations.js';
import type { SqliteWebhookStatements } from './webhook-statements.js';
import { backlogOf, type BacklogRow, type Dialect } from '../sql/statements.js';
import type { OutboxStore, WebhookBacklog, WebhookOperationResult, WebhookStore } from '../store.js';

/** Webhook bookkeeping: losing it to a power cut only repeats a delivery (see WriteQueue.add). */
const NOT_DURABLE = { durable: false } as const;

/** The webhooks facet on SQLite: writes in the write queue, reads at once. */
export class SqliteWebhookStore implements WebhookStore {
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  readonly #operations: SqliteWebhookOperations;
  /** Marks the running write batch as one that queued events (the dispatcher is told after its commit). */
  readonly #eventsQueued: () => void;

  constructor(state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements, operations: SqliteWebhookOperations, eventsQueued: () => void) {
    this.#state = state;
    this.#writes = writes;
    this.#webhooks = webhooks;
    this.#operations = operations;
    this.#eventsQueued = eventsQueued;
  }

  /** A write that may queue events: the dispatcher hears of those that did once the batch is committed. */
  #queueing<T>(write: () => T, queued: (result: T) => boolean): Promise<T> {
    return this.#writes.add(() => {
      const result = write();
      if (queued(result)) this.#eventsQueued();
      return result;
    });
  }

  createWebhook(endpoint: NewWebhookEndpoint, maxPerUser: number): Promise<WebhookEndpoint | 'limit'> {
    return this.#writes.add(() => this.#webhooks.create(endpoint, maxPerUser, Date.now()));
  }

  async listWebhooks(user: string | null): Promise<WebhookEndpoint[]> {
    return this.#state.read(() => this.#webhooks.list(user, Date.now()));
  }

  deleteWebhook(id: string, user: string | null): Promise<boolean> {
    return this.#writes.add(() => this.#webhooks.delete(id, user));
  }

  async listDeliveryAttempts(endpointId: string, user: string | null, limit: number): Promise<DeliveryAttempt[] | null> {
    return this.#state.read(() => this.#webhooks.attempts(endpointId, user, limit));
  }

  updateWebhook(id: string, user: string | null, change: WebhookChange): Promise<WebhookEndpoint | null> {
    return this.#writes.add(() => this.#operations.update(id, user, change, Date.now()));
  }

  rotateWebhookSecret(id: string, user: string | null, secret: string, overlapMs: number): Promise<{ previousSecretExpiresAt: Date } | null> {
    return this.#writes.add(() => this.#operations.rotate(id, user, secret, overlapMs, Date.now()));
  }

  resendWebhookEvent(id: string, user: string | null, eventId: string, maxQueued?: number): Promise<WebhookOperationResult<'queued' | 'no-event'>> {
    return this.#queueing(() => this.#operations.resend(id, user, eventId, Date.now(), maxQueued), (r) => r === 'queued');
  }

  recoverWebhookEvents(id: string, user: string | null, since: Date, maxQueued?: number): Promise<WebhookOperationResult<number>> {
    return this.#queueing(() => this.#operations.recover(id, user, since.getTime(), Date.now(), maxQueued), (r) => typeof r === 'number' && r > 0);
  }

  queueTestEvent(id: string, user: string | null, maxQueued?: number): Promise<WebhookOperationResult<string>> {
    return this.#queueing(() => this.#operations.test(id, user, Date.now(), maxQueued), (r) => typeof r === 'string');
  }
}

/** Who is told after a batch that queued webhook events is committed and synced (see OutboxStore.onEventsQueued). */
export interface OutboxListener {
  listener: (() => void) | undefined;
}

/** The outbox on SQLite: one server per store claims, so no row locks; its bookkeeping is not durable. */
export class SqliteOutbox implements OutboxStore {
  readonly #db: Database.Database;
  readonly #d: Dialect;
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  readonly #events: OutboxListener;
  readonly #backlogText: string;
  /** Prepared on first use: only a server with metrics on asks. */
  #backlog: Database.Statement<[number], BacklogRow> | undefined;

  constructor(
    db: Database.Database, d: Dialect, state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements, events: OutboxListener, backlog: string,
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
    this.#events.listener = listener;
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
