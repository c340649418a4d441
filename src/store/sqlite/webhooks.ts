import type { DeliveryAttempt, NewWebhookEndpoint, WebhookChange, WebhookEndpoint } from '../../domain/webhook.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';
import type { SqliteWebhookOperations } from './webhook-operations.js';
import type { SqliteWebhookStatements } from './webhook-statements.js';
import type { WebhookOperationResult, WebhookStore } from '../store.js';

/** The webhooks facet on SQLite: writes in the write queue, reads at once. */
export class SqliteWebhookStore implements WebhookStore {
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  readonly #operations: SqliteWebhookOperations;

  constructor(state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements, operations: SqliteWebhookOperations) {
    this.#state = state;
    this.#writes = writes;
    this.#webhooks = webhooks;
    this.#operations = operations;
  }

  /** A write that may queue events: the dispatcher hears of those that did once the batch is committed. */
  #queueing<T>(write: () => T, queued: (result: T) => boolean): Promise<T> {
    return this.#writes.add(() => {
      const result = write();
      if (queued(result)) this.#writes.wakeAfterCommit();
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
