import type Database from './driver.js';
import type { NewPlant } from '../../domain/plant.js';
import { receives, withdrawEvents } from '../sql/all-users.js';
import { SQLITE_DUE } from '../sql/claim.js';
import { eraseExpiredSecretsSql, failPendingSql } from '../sql/webhook-operations.js';
import { param, sql, type Dialect } from '../sql/dialect.js';
import { Prepared } from './prepared.js';
import { eventIdSql } from '../sql/wire.js';
import {
  attemptOf, claimedOf, deleteEndpointAttempts, deleteEndpointDeliveries, endpointColumns, endpointOf, GONE_REASON, perEndpoint,
  stateAfter, type AttemptRow, type ClaimRow, type EndpointRow,
} from '../sql/webhooks.js';
import {
  webhookBody,
  type AttemptResult, type ClaimedDelivery, type ClaimRequest, type DeliveryAttempt, type NewWebhookEndpoint, type WebhookEndpoint,
} from '../../domain/webhook.js';

/** A due event as the claim reads it, with its attempts so far. */
interface DueRow extends ClaimRow {
  readonly seq: number;
  readonly attempts: number;
}

/**
 * The webhook statements of a SQLite store, prepared once. Every method here runs synchronously inside
 * a transaction the store's write queue began (writes) or outside any (reads); none waits for a lock.
 */
export class SqliteWebhookStatements {
  readonly #d: Dialect;
  readonly #receives: Database.Statement<[string], number>;
  readonly #queue: Prepared;
  readonly #countUser: Database.Statement<[string], number>;
  readonly #insert: Prepared<EndpointRow>;
  readonly #listAll: Prepared<EndpointRow>;
  readonly #listUser: Prepared<EndpointRow>;
  readonly #find: Database.Statement<[{ id: string; user: string | null }], { id: string; all_users: number }>;
  readonly #deleteEndpoint: Database.Statement<[string]>;
  readonly #deleteDeliveries: Database.Statement<[string]>;
  readonly #deleteAttempts: Database.Statement<[string]>;
  readonly #attempts: Database.Statement<[{ id: string; owner: string | null; limit: number }], AttemptRow>;
  readonly #due: Database.Statement<[{ now: number; busy: string; perEndpoint: number; limit: number }], DueRow>;
  readonly #lease: Database.Statement<[number, string, number]>;
  readonly #settle: Database.Statement<[{ state: string; next: number | null; finished: number | null; seq: number; instance: string; attempt: number }]>;
  readonly #recordAttempt: Database.Statement<[{ seq: number; attempt: number; status: number | null; error: string | null; at: number; state: string; next: number | null }]>;
  readonly #disable: Database.Statement<[number, string, string]>;
  readonly #failPending: Prepared;
  readonly #release: Database.Statement<[number, number, string, number]>;
  readonly #sweepDeliveries: Database.Statement<[number]>;
  readonly #sweepAttempts: Database.Statement<[number]>;
  readonly #releaseOrphans: Database.Statement<[number]>;
  readonly #withdrawUser: Prepared;
  readonly #withdrawAll: Prepared;
  readonly #eraseSecrets: Prepared;

  constructor(db: Database.Database, d: Dialect) {
    this.#d = d;
    const columns = endpointColumns(d);
    const owner = param('owner');
    // The outbox, on the create's hot path. Most stores have no endpoint for most owners: a lookup of a
    // receiving endpoint first costs a small part of the insert-select and saves making the body. The
    // event id is made by SQLite, one per endpoint (EVENT_ID, sql/wire.ts).
    this.#receives = db.prepare<[string], number>(
      'SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL AND (all_users = 1 OR username = ?) LIMIT 1',
    ).pluck();
    // The owner goes with the event, so that other users' events can be told apart later (withdrawn,
    // hidden from a caller that is not admin).
    this.#queue = new Prepared(db, sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, plant_id, owner, body, state, attempts, next_attempt_at, created_at)
       SELECT ${eventIdSql(d, d.nowMs)}, e.id, ${param('id')}, ${owner}, ${param('body')}, 'pending', 0, ${d.now}, ${d.now}
       FROM webhook_endpoints e WHERE e.disabled_at IS NULL AND ${receives(d, owner)}`);
    this.#countUser = db.prepare<[string], number>('SELECT count(*) FROM webhook_endpoints WHERE username = ?').pluck();
    this.#insert = new Prepared(db, sql`INSERT INTO webhook_endpoints (id, username, all_users, url, description, secret, created_at)
       VALUES (${param('id')}, ${param('user')}, ${param('allUsers')}, ${param('url')}, ${param('description')}, ${param('secret')}, ${d.now})
       RETURNING ${columns}`);
    // rowid: creation order even within one millisecond.
    this.#listAll = new Prepared(db, sql`SELECT ${columns} FROM webhook_endpoints ORDER BY rowid`);
    this.#listUser = new Prepared(db, sql`SELECT ${columns} FROM webhook_endpoints WHERE username = ${param('user')} ORDER BY rowid`);
    this.#find = db.prepare('SELECT id, all_users FROM webhook_endpoints WHERE id = @id AND (@user IS NULL OR username = @user)');
    this.#deleteEndpoint = db.prepare('DELETE FROM webhook_endpoints WHERE id = ?');
    this.#deleteDeliveries = db.prepare(deleteEndpointDeliveries(d));
    this.#deleteAttempts = db.prepare(deleteEndpointAttempts(d));
    this.#attempts = db.prepare(
      `SELECT event_id, CAST(plant_id AS TEXT) AS plant_id, attempt, status, error, at, state, next_attempt_at, test
       FROM webhook_attempts WHERE endpoint_id = @id AND (@owner IS NULL OR owner = @owner) ORDER BY seq DESC LIMIT @limit`,
    );
    // Due: pending, its time come (a live claim's time is its lease's end), its endpoint enabled and not
    // busy here; in turns across users and endpoints (sql/claim.ts).
    this.#due = db.prepare(SQLITE_DUE);
    this.#lease = db.prepare('UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, leased_by = ? WHERE seq = ?');
    // Only under this instance's live claim of this attempt: a result that comes back after the lease
    // ended and another instance claimed the event again must not overwrite that claim.
    this.#settle = db.prepare(
      `UPDATE webhook_deliveries SET state = @state, next_attempt_at = @next, finished_at = @finished, leased_by = NULL
       WHERE seq = @seq AND leased_by = @instance AND attempts = @attempt AND state = 'pending'`,
    );
    // Every attempt made is recorded while its event exists, stale ones too: the receiver got the request.
    this.#recordAttempt = db.prepare(
      `INSERT INTO webhook_attempts (endpoint_id, event_id, plant_id, owner, attempt, status, error, at, state, next_attempt_at, test)
       SELECT endpoint_id, event_id, plant_id, owner, @attempt, @status, @error, @at, @state, @next, test FROM webhook_deliveries WHERE seq = @seq`,
    );
    this.#disable = db.prepare('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL');
    this.#failPending = new Prepared(db, failPendingSql(d));
    this.#release = db.prepare(
      `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = ?, leased_by = NULL
       WHERE seq = ? AND leased_by = ? AND attempts = ? AND state = 'pending'`,
    );
    this.#sweepDeliveries = db.prepare("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < ?");
    this.#sweepAttempts = db.prepare('DELETE FROM webhook_attempts WHERE at < ?');
    this.#releaseOrphans = db.prepare(
      "UPDATE webhook_deliveries SET next_attempt_at = ?, leased_by = NULL WHERE state = 'pending' AND leased_by IS NOT NULL",
    );
    this.#withdrawUser = new Prepared(db, withdrawEvents(d, sql`(SELECT username FROM tokens WHERE id = ${param('token')})`));
    this.#withdrawAll = new Prepared(db, withdrawEvents(d, null));
    this.#eraseSecrets = new Prepared(db, eraseExpiredSecretsSql(d));
  }

  /** In the create's transaction: one event per endpoint that receives `owner`'s plant. True when any was queued. */
  queueEvents(owner: string, plant: NewPlant): boolean {
    if (this.#receives.get(owner) === undefined) return false;
    return this.#queue.run({ now: Date.now(), id: plant.id, owner, body: webhookBody(plant) }).changes > 0;
  }

  create(endpoint: NewWebhookEndpoint, maxPerUser: number, now: number): WebhookEndpoint | 'limit' {
    // In the queue's write transaction (BEGIN IMMEDIATE): nobody else writes between count and insert.
    if (this.#countUser.get(endpoint.user)! >= maxPerUser) return 'limit';
    const row = this.#insert.get({
      id: endpoint.id, user: endpoint.user, allUsers: this.#d.flag(endpoint.allUsers), url: endpoint.url, description: endpoint.description,
      secret: endpoint.secret, now,
    });
    if (!row) throw new Error('webhook insert returned no row');
    return endpointOf(this.#d, row);
  }

  list(user: string | null, now: number): WebhookEndpoint[] {
    return (user === null ? this.#listAll.all({ now }) : this.#listUser.all({ user, now })).map((row) => endpointOf(this.#d, row));
  }

  delete(id: string, user: string | null): boolean {
    if (!this.#find.get({ id, user })) return false;
    this.#deleteDeliveries.run(id);
    this.#deleteAttempts.run(id);
    this.#deleteEndpoint.run(id);
    return true;
  }

  /**
   * `user` is the caller's user, or null for an admin: a caller that is not admin sees only its own
   * plants' events of an all-users endpoint, as it lists only its own plants.
   */
  attempts(endpointId: string, user: string | null, limit: number): DeliveryAttempt[] | null {
    const found = this.#find.get({ id: endpointId, user });
    if (!found) return null;
    const owner = user !== null && found.all_users === 1 ? user : null;
    return this.#attempts.all({ id: endpointId, owner, limit }).map((row) => attemptOf(this.#d, row));
  }

  claim(request: ClaimRequest, now: number): ClaimedDelivery[] {
    if (request.limit <= 0 || request.perEndpoint <= 0) return [];
    const due = this.#due.all({ now, busy: JSON.stringify(request.busy), perEndpoint: perEndpoint(request), limit: request.limit });
    const leaseEnd = now + request.leaseMs;
    return due.map((r) => {
      this.#lease.run(leaseEnd, request.instance, r.seq);
      return claimedOf(this.#d, r, r.attempts + 1);
    });
  }

  record(instance: string, results: readonly AttemptResult[], now: number): void {
    // In the order they were made, so that the attempt list reads as it happened.
    const sorted = [...results].sort((a, b) => a.at.getTime() - b.at.getTime());
    for (const r of sorted) {
      const state = stateAfter(r.outcome);
      const next = state === 'pending' ? now + (r.retryInMs ?? 0) : null;
      const { seq, attempt } = r.delivery;
      this.#recordAttempt.run({ seq, attempt, status: r.status, error: r.error, at: r.at.getTime(), state, next });
      const held = this.#settle.run({ state, next, finished: state === 'pending' ? null : now, seq, instance, attempt }).changes === 1;
      if (held && r.outcome === 'gone') {
        this.#disable.run(now, GONE_REASON, r.delivery.endpointId);
        this.#failPending.run({ now, id: r.delivery.endpointId });
      }
    }
  }

  release(instance: string, deliveries: readonly ClaimedDelivery[], now: number): void {
    for (const d of deliveries) this.#release.run(now, d.seq, instance, d.attempt);
  }

  /**
   * At a server's start: every claim in the store is a dead process's (one server per store holds the
   * lock, and only servers claim), so its events are due at once rather than when the lease ends.
   * The attempt count stays: the attempt may have been made before the crash.
   */
  releaseOrphans(now: number): number {
    return this.#releaseOrphans.run(now).changes;
  }

  /**
   * Also fails other users' events of all-users endpoints whose user's admin tokens have expired since,
   * and erases previous secrets past their overlap.
   */
  sweep(before: number, now: number): number {
    const removed = this.#sweepDeliveries.run(before).changes;
    this.#sweepAttempts.run(before);
    this.#withdrawAll.run({ now });
    this.#eraseSecrets.run({ now });
    return removed;
  }

  /** In the transaction that revoked token `tokenId`: its user's all-users endpoints may have lost their reach. */
  withdrawForToken(tokenId: number, now: number): void {
    this.#withdrawUser.run({ now, token: tokenId });
  }
}
