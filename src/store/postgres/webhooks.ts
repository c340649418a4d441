import { TEST_EVENT_BODY, type DeliveryAttempt, type NewWebhookEndpoint, type WebhookChange, type WebhookEndpoint } from '../../domain/webhook.js';
import { POSTGRES, render, sql, valueless, type Dialect } from '../sql/dialect.js';
import {
  countQueuedByOperationsSql, countRecoverableSql, failPendingSql, findEndpointSql, findEventSql, insertTestEventSql, ownerFilter,
  recoverEventsSql, requeueEventSql, rotateSecretSql, updateEndpointSql, type FoundEndpointRow, type FoundEventRow,
} from '../sql/webhook-operations.js';
import {
  attemptOf, deleteEndpointAttempts, deleteEndpointDeliveries, endpointColumns, endpointOf,
  type AttemptRow, type EndpointRow,
} from '../sql/webhooks.js';
import type { QueueFull, WebhookOperationResult, WebhookStore } from '../store.js';
import { notifyEventsSql } from './notify.js';
import type { Connections, TxQuery } from './pool.js';

const D = POSTGRES;
const COLUMNS = endpointColumns(D);
const FIND_ENDPOINT = render(D, sql`${findEndpointSql(D)} FOR SHARE`);
const UPDATE = render(D, updateEndpointSql(D, COLUMNS));
const FAIL_PENDING = render(D, failPendingSql(D));
const FIND_EVENT = render(D, findEventSql());
const REQUEUE_EVENT = render(D, requeueEventSql(D));
const RECOVER_EVENTS = render(D, recoverEventsSql(D));
const COUNT_RECOVERABLE = render(D, countRecoverableSql(D));
const COUNT_QUEUED = render(D, countQueuedByOperationsSql(D));
/**
 * Operations on one user's endpoints queue behind this lock until commit, so each counts what the one
 * before queued (as webhook creates do behind theirs): concurrent ones, on any instance, cannot pass
 * WEBHOOK_MAX_QUEUED_PER_USER together.
 */
const LOCK_USER_QUEUE = "SELECT pg_advisory_xact_lock(hashtext('webhook-operations:' || $1))";
const TEST_EVENT = render(D, insertTestEventSql(D));
const ROTATE = render(D, rotateSecretSql(D));
const DELETE_DELIVERIES = deleteEndpointDeliveries(D);
const DELETE_ATTEMPTS = deleteEndpointAttempts(D);
/** Tells the other instances on this store that events were queued (notify.ts), on commit. */
const NOTIFY = notifyEventsSql('(SELECT 1) AS queued', '$1');

type Refusal = { readonly refused: 'no-endpoint' | 'disabled' };

/**
 * The webhooks facet on PostgreSQL: the endpoints and their attempts. Every time comes from the
 * database's clock (now()), so instances agree.
 */
export class PostgresWebhooks implements WebhookStore {
  readonly #d: Dialect;
  readonly #connections: Connections;
  readonly #columns: string;
  /** Tells this handle's dispatcher that events were queued (other instances hear the NOTIFY). */
  readonly #eventsQueued: () => void;
  readonly #notifyToken: string;

  constructor(d: Dialect, connections: Connections, eventsQueued: () => void, notifyToken: string) {
    this.#d = d;
    this.#connections = connections;
    this.#columns = valueless(d, endpointColumns(d));
    this.#eventsQueued = eventsQueued;
    this.#notifyToken = notifyToken;
  }

  async createWebhook(endpoint: NewWebhookEndpoint, maxPerUser: number): Promise<WebhookEndpoint | 'limit'> {
    return this.#connections.transaction(async (query) => {
      // Creates of one user queue on this lock until commit, so each counts what the one before stored.
      await query('webhook_lock_user', "SELECT pg_advisory_xact_lock(hashtext('webhooks:' || $1))", [endpoint.user]);
      const { rows: counted } = await query<{ n: number }>(
        'webhook_count_user', 'SELECT count(*)::int AS n FROM webhook_endpoints WHERE username = $1', [endpoint.user],
      );
      if ((counted[0]?.n ?? 0) >= maxPerUser) return 'limit';
      const { rows } = await query<EndpointRow>(
        'webhook_insert',
        `INSERT INTO webhook_endpoints (id, username, all_users, url, description, secret)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${this.#columns}`,
        [endpoint.id, endpoint.user, endpoint.allUsers, endpoint.url, endpoint.description, endpoint.secret],
      );
      const row = rows[0];
      if (!row) throw new Error('webhook insert returned no row');
      return endpointOf(this.#d, row);
    });
  }

  async listWebhooks(user: string | null): Promise<WebhookEndpoint[]> {
    const { rows } = await this.#connections.query<EndpointRow>(
      'webhook_list',
      `SELECT ${this.#columns} FROM webhook_endpoints
       WHERE $1::text IS NULL OR username = $1 ORDER BY created_at, id`,
      [user],
    );
    return rows.map((row) => endpointOf(this.#d, row));
  }

  /**
   * One transaction, the endpoint first: its row lock makes a `recordAttempts` of its events that is
   * under way finish first, and the statements after it then see (and remove) what that one recorded.
   */
  async deleteWebhook(id: string, user: string | null): Promise<boolean> {
    return this.#connections.transaction(async (query) => {
      const { rowCount } = await query(
        'webhook_delete', 'DELETE FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR username = $2)', [id, user],
      );
      if (rowCount !== 1) return false;
      await query('webhook_delete_deliveries', DELETE_DELIVERIES, [id]);
      await query('webhook_delete_attempts', DELETE_ATTEMPTS, [id]);
      return true;
    });
  }

  async listDeliveryAttempts(endpointId: string, user: string | null, limit: number): Promise<DeliveryAttempt[] | null> {
    const { rows } = await this.#connections.query<AttemptRow & { seq: string | null }>(
      'webhook_attempts_list',
      `SELECT a.seq, a.event_id, a.plant_id, a.attempt, a.status, a.error, a.at, a.state, a.next_attempt_at, a.test
       FROM webhook_endpoints e
       LEFT JOIN LATERAL (
         SELECT * FROM webhook_attempts WHERE endpoint_id = e.id AND ($2::text IS NULL OR NOT e.all_users OR owner = $2) -- not admin: its own plants'
         ORDER BY seq DESC LIMIT $3
       ) a ON true
       WHERE e.id = $1 AND ($2::text IS NULL OR e.username = $2)
       ORDER BY a.seq DESC`,
      [endpointId, user, limit],
    );
    if (rows.length === 0) return null;
    return rows.flatMap((r) => (r.seq === null ? [] : [attemptOf(this.#d, r)]));
  }

  async updateWebhook(id: string, user: string | null, change: WebhookChange): Promise<WebhookEndpoint | null> {
    return this.#connections.transaction(async (query) => {
      const { rows } = await query<EndpointRow>('webhook_update', UPDATE.text, UPDATE.values({
        id, user, url: change.url ?? null, description: change.description ?? null, setDescription: change.description !== undefined,
        enable: change.enable === true, disable: change.disable ?? null,
      }));
      const row = rows[0];
      if (!row) return null;
      if (change.disable !== undefined) await query('webhook_fail_pending', FAIL_PENDING.text, FAIL_PENDING.values({ id }));
      return endpointOf(this.#d, row);
    });
  }

  async rotateWebhookSecret(id: string, user: string | null, secret: string, overlapMs: number): Promise<{ previousSecretExpiresAt: Date } | null> {
    const { rows } = await this.#connections.query<{ expires_at: Date }>('webhook_rotate', ROTATE.text, ROTATE.values({ id, user, secret, overlap: overlapMs }));
    const row = rows[0];
    return row ? { previousSecretExpiresAt: row.expires_at } : null;
  }

  /**
   * `work` in one transaction, after the endpoint is found (and share-locked, so that a PATCH disabling it
   * or a delete waits for this to commit); the dispatchers are told when `queued` says events were.
   */
  async #onEndpoint<T>(
    id: string, user: string | null, work: (query: TxQuery, owner: string | null, endpoint: FoundEndpointRow) => Promise<T>,
    queued: (result: T) => boolean,
  ): Promise<T | Refusal> {
    let notified = false;
    const result = await this.#connections.transaction(async (query): Promise<T | Refusal> => {
      const { rows } = await query<FoundEndpointRow>('webhook_find_endpoint', FIND_ENDPOINT.text, FIND_ENDPOINT.values({ id, user }));
      const found = rows[0];
      if (!found) return { refused: 'no-endpoint' };
      if (found.disabled_at !== null) return { refused: 'disabled' };
      const done = await work(query, ownerFilter({ username: found.username, reach: this.#d.flagOf(found.all_users) }, user), found);
      notified = queued(done);
      if (notified) await query('webhook_notify', NOTIFY, [this.#notifyToken]);
      return done;
    });
    if (notified) this.#eventsQueued();
    return result;
  }

  /**
   * The refusal when `adding` more events would pass `max` for the endpoint's user; null when they fit
   * (then the lock is held until commit). Without a bound, nothing is counted or locked.
   */
  async #full(query: TxQuery, username: string, adding: number | (() => Promise<number>), max: number | undefined): Promise<QueueFull | null> {
    if (max === undefined) return null;
    await query('webhook_lock_user_queue', LOCK_USER_QUEUE, [username]);
    const more = typeof adding === 'number' ? adding : await adding();
    if (more === 0) return null;
    const { rows } = await query<{ n: number }>('webhook_count_queued', COUNT_QUEUED.text, COUNT_QUEUED.values({ user: username }));
    const pending = rows[0]?.n ?? 0;
    return pending + more > max ? { refused: 'queue-full', pending, adding: more, max } : null;
  }

  async resendWebhookEvent(id: string, user: string | null, eventId: string, maxQueued?: number): Promise<WebhookOperationResult<'queued' | 'no-event'>> {
    return this.#onEndpoint(id, user, async (query, owner, endpoint) => {
      const { rows } = await query<FoundEventRow>('webhook_find_event', FIND_EVENT.text, FIND_EVENT.values({ id, event: eventId, owner }));
      const event = rows[0];
      if (!event) return 'no-event' as const;
      const full = await this.#full(query, endpoint.username, event.state === 'pending' ? 0 : 1, maxQueued);
      if (full) return full;
      await query('webhook_requeue_event', REQUEUE_EVENT.text, REQUEUE_EVENT.values({ seq: event.seq }));
      return 'queued' as const;
    }, (r) => r === 'queued');
  }

  async recoverWebhookEvents(id: string, user: string | null, since: Date, maxQueued?: number): Promise<WebhookOperationResult<number>> {
    return this.#onEndpoint(id, user, async (query, owner, endpoint) => {
      // Counted after the lock: what the lock holder before recovered is no longer failed.
      const recoverable = async () => (await query<{ n: number }>('webhook_count_recoverable', COUNT_RECOVERABLE.text, COUNT_RECOVERABLE.values({ id, since, owner }))).rows[0]?.n ?? 0;
      const full = await this.#full(query, endpoint.username, recoverable, maxQueued);
      if (full) return full;
      const { rowCount } = await query('webhook_recover', RECOVER_EVENTS.text, RECOVER_EVENTS.values({ id, since, owner }));
      return rowCount ?? 0;
    }, (n) => typeof n === 'number' && n > 0);
  }

  async queueTestEvent(id: string, user: string | null, maxQueued?: number): Promise<WebhookOperationResult<string>> {
    return this.#onEndpoint(id, user, async (query, _owner, endpoint) => {
      const full = await this.#full(query, endpoint.username, 1, maxQueued);
      if (full) return full;
      const { rows } = await query<{ event_id: string }>('webhook_test_event', TEST_EVENT.text, TEST_EVENT.values({ id, owner: endpoint.username, body: TEST_EVENT_BODY }));
      const row = rows[0];
      if (!row) throw new Error('test event insert returned no row');
      return row.event_id;
    }, (r) => typeof r === 'string');
  }
}
