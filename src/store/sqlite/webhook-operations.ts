import type Database from './driver.js';
import { TEST_EVENT_BODY, type WebhookChange, type WebhookEndpoint } from '../../domain/webhook.js';
import type { Dialect } from '../sql/statements.js';
import {
  failPendingSql, findEndpointSql, findEventSql, insertTestEventSql, ownerFilter, recoverEventsSql, requeueEventSql, rotateSecretSql,
  updateEndpointSql, type FoundEndpointRow, type FoundEventRow,
} from '../sql/webhook-operations.js';
import { endpointColumns, endpointOf, type EndpointRow } from '../sql/webhooks.js';
import type { WebhookOperationResult } from '../store.js';

type Refusal = { readonly refused: 'no-endpoint' | 'disabled' };

/**
 * The webhook operations' statements on SQLite (the SQL is shared: sql/webhook-operations.ts), prepared
 * once. Each method runs inside a write transaction of the store's queue; `now` is in milliseconds.
 */
export class SqliteWebhookOperations {
  readonly #d: Dialect;
  readonly #find: Database.Statement<[{ id: string; user: string | null; now: number }], FoundEndpointRow>;
  readonly #update: Database.Statement<[Record<string, unknown>], EndpointRow>;
  readonly #failPending: Database.Statement<[{ now: number; id: string }]>;
  readonly #rotate: Database.Statement<[Record<string, unknown>], { expires_at: number }>;
  readonly #findEvent: Database.Statement<[{ id: string; event: string; owner: string | null }], FoundEventRow>;
  readonly #requeue: Database.Statement<[{ now: number; seq: number }]>;
  readonly #recover: Database.Statement<[{ now: number; id: string; since: number; owner: string | null }]>;
  readonly #test: Database.Statement<[{ now: number; id: string; owner: string; body: string }], { event_id: string }>;

  constructor(db: Database.Database, d: Dialect) {
    this.#d = d;
    this.#find = db.prepare(findEndpointSql('sqlite', '@now', { id: '@id', user: '@user' }));
    this.#update = db.prepare(updateEndpointSql(endpointColumns(d, '@now'), '@now', {
      id: '@id', user: '@user', url: '@url', description: '@description', setDescription: '@setDescription', enable: '@enable',
      disable: '@disable',
    }));
    this.#failPending = db.prepare(failPendingSql('@now', '@id'));
    this.#rotate = db.prepare(rotateSecretSql('@now', '@now + @overlap', { id: '@id', user: '@user', secret: '@secret', overlap: '@overlap' }));
    this.#findEvent = db.prepare(findEventSql({ id: '@id', event: '@event', owner: '@owner' }));
    this.#requeue = db.prepare(requeueEventSql('@now', '@seq'));
    this.#recover = db.prepare(recoverEventsSql('@now', { id: '@id', since: '@since', owner: '@owner' }));
    this.#test = db.prepare(insertTestEventSql('sqlite', '@now', '@now', { id: '@id', owner: '@owner', body: '@body' }));
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
  #endpoint(id: string, user: string | null, now: number): { owner: string | null } | Refusal {
    const found = this.#find.get({ id, user, now });
    if (!found) return { refused: 'no-endpoint' };
    if (found.disabled_at !== null) return { refused: 'disabled' };
    return { owner: ownerFilter({ username: found.username, reach: this.#d.flagOf(found.all_users) }, user) };
  }

  resend(id: string, user: string | null, eventId: string, now: number): WebhookOperationResult<'queued' | 'no-event'> {
    const endpoint = this.#endpoint(id, user, now);
    if ('refused' in endpoint) return endpoint;
    const event = this.#findEvent.get({ id, event: eventId, owner: endpoint.owner });
    if (!event) return 'no-event';
    this.#requeue.run({ now, seq: Number(event.seq) });
    return 'queued';
  }

  recover(id: string, user: string | null, since: number, now: number): WebhookOperationResult<number> {
    const endpoint = this.#endpoint(id, user, now);
    if ('refused' in endpoint) return endpoint;
    return this.#recover.run({ now, id, since, owner: endpoint.owner }).changes;
  }

  test(id: string, user: string | null, now: number): WebhookOperationResult<string> {
    const found = this.#find.get({ id, user, now });
    if (!found) return { refused: 'no-endpoint' };
    if (found.disabled_at !== null) return { refused: 'disabled' };
    const row = this.#test.get({ now, id, owner: found.username, body: TEST_EVENT_BODY });
    if (!row) throw new Error('test event insert returned no row');
    return row.event_id;
  }
}
