import type Database from './driver.js';
import { TEST_EVENT_BODY, type WebhookChange, type WebhookEndpoint } from '../../domain/webhook.js';
import type { Dialect } from '../sql/dialect.js';
import { Prepared } from './prepared.js';
import {
  countQueuedByOperationsSql, countRecoverableSql, failPendingSql, findEndpointSql, findEventSql, insertTestEventSql, ownerFilter,
  recoverEventsSql, requeueEventSql, rotateSecretSql, updateEndpointSql, type FoundEndpointRow, type FoundEventRow,
} from '../sql/webhook-operations.js';
import { endpointColumns, endpointOf, type EndpointRow } from '../sql/webhooks.js';
import type { QueueFull, WebhookOperationResult } from '../store.js';

type Refusal = { readonly refused: 'no-endpoint' | 'disabled' };
type Count = { n: number };

/**
 * The webhook operations' statements on SQLite (the SQL is shared: sql/webhook-operations.ts), prepared
 * once. Each method runs inside a write transaction of the store's queue; `now` is in milliseconds.
 */
export class SqliteWebhookOperations {
  readonly #d: Dialect;
  readonly #find: Prepared<FoundEndpointRow>;
  readonly #update: Prepared<EndpointRow>;
  readonly #failPending: Prepared;
  readonly #rotate: Prepared<{ expires_at: number }>;
  readonly #findEvent: Prepared<FoundEventRow>;
  readonly #requeue: Prepared;
  readonly #recover: Prepared;
  readonly #test: Prepared<{ event_id: string }>;
  readonly #countRecoverable: Prepared<Count>;
  readonly #countQueued: Prepared<Count>;

  constructor(db: Database.Database, d: Dialect) {
    this.#d = d;
    this.#find = new Prepared(db, findEndpointSql(d));
    this.#update = new Prepared(db, updateEndpointSql(d, endpointColumns(d)));
    this.#failPending = new Prepared(db, failPendingSql(d));
    this.#rotate = new Prepared(db, rotateSecretSql(d));
    this.#findEvent = new Prepared(db, findEventSql());
    this.#requeue = new Prepared(db, requeueEventSql(d));
    this.#recover = new Prepared(db, recoverEventsSql(d));
    this.#test = new Prepared(db, insertTestEventSql(d));
    this.#countRecoverable = new Prepared(db, countRecoverableSql(d));
    this.#countQueued = new Prepared(db, countQueuedByOperationsSql(d));
  }

  update(id: string, user: string | null, change: WebhookChange, now: number): WebhookEndpoint | null {
    const row = this.#update.get({
      now, id, user, url: change.url ?? null, description: change.description ?? null, setDescription: change.description === undefined ? 0 : 1,
      enable: change.enable ? 1 : 0, disable: change.disable ?? null,
    });
    if (!row) return null;
    if (change.disable !== undefined) this.#failPending.run({ now, id });
    return endpointOf(this.#d, row);
  }

  rotate(id: string, user: string | null, secret: string, overlapMs: number, now: number): { previousSecretExpiresAt: Date } | null {
    const row = this.#rotate.get({ now, id, user, secret, overlap: overlapMs });
    return row ? { previousSecretExpiresAt: new Date(row.expires_at) } : null;
  }

  /** The endpoint the caller may act on, and whose events it may queue again; or why not. */
  #endpoint(id: string, user: string | null, now: number): { owner: string | null; username: string } | Refusal {
    const found = this.#find.get({ id, user, now });
    if (!found) return { refused: 'no-endpoint' };
    if (found.disabled_at !== null) return { refused: 'disabled' };
    return { owner: ownerFilter({ username: found.username, reach: this.#d.flagOf(found.all_users) }, user), username: found.username };
  }

  /**
   * The refusal when `adding` more events would pass `max` for the endpoint's user; null when they fit.
   * Exact: this runs in the write transaction, and SQLite has one writer, so nothing is queued between the
   * count and the statement that queues.
   */
  #full(username: string, adding: number, max: number | undefined): QueueFull | null {
    if (max === undefined || adding === 0) return null;
    const pending = this.#countQueued.get({ user: username })?.n ?? 0;
    return pending + adding > max ? { refused: 'queue-full', pending, adding, max } : null;
  }

  resend(id: string, user: string | null, eventId: string, now: number, max?: number): WebhookOperationResult<'queued' | 'no-event'> {
    const endpoint = this.#endpoint(id, user, now);
    if ('refused' in endpoint) return endpoint;
    const event = this.#findEvent.get({ id, event: eventId, owner: endpoint.owner });
    if (!event) return 'no-event';
    const full = this.#full(endpoint.username, event.state === 'pending' ? 0 : 1, max);
    if (full) return full;
    this.#requeue.run({ now, seq: Number(event.seq) });
    return 'queued';
  }

  recover(id: string, user: string | null, since: number, now: number, max?: number): WebhookOperationResult<number> {
    const endpoint = this.#endpoint(id, user, now);
    if ('refused' in endpoint) return endpoint;
    const selected = { id, since, owner: endpoint.owner };
    if (max !== undefined) {
      const full = this.#full(endpoint.username, this.#countRecoverable.get(selected)?.n ?? 0, max);
      if (full) return full;
    }
    return this.#recover.run({ now, ...selected }).changes;
  }

  test(id: string, user: string | null, now: number, max?: number): WebhookOperationResult<string> {
    const endpoint = this.#endpoint(id, user, now);
    if ('refused' in endpoint) return endpoint;
    const full = this.#full(endpoint.username, 1, max);
    if (full) return full;
    const row = this.#test.get({ now, id, owner: endpoint.username, body: TEST_EVENT_BODY });
    if (!row) throw new Error('test event insert returned no row');
    return row.event_id;
  }
}
