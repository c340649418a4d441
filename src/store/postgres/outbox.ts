import type { AttemptResult, ClaimedDelivery, ClaimRequest } from '../../domain/webhook.js';
import { withdrawEvents } from '../sql/all-users.js';
import { POSTGRES_CLAIM } from '../sql/claim.js';
import { eraseExpiredSecretsSql } from '../sql/webhook-operations.js';
import { POSTGRES, valueless, type Dialect } from '../sql/dialect.js';
import { backlogOf, type BacklogRow } from '../sql/statements.js';
import { claimedOf, GONE_REASON, perEndpoint, stateAfter, type ClaimRow } from '../sql/webhooks.js';
import type { OutboxStore, WebhookBacklog } from '../store.js';
import type { Connections } from './pool.js';
import type { EventsNotice } from './notify.js';

const WITHDRAW = valueless(POSTGRES, withdrawEvents(POSTGRES, null));
const ERASE_SECRETS = valueless(POSTGRES, eraseExpiredSecretsSql(POSTGRES));

/** Who is told after a commit that queued webhook events (see OutboxStore.onEventsQueued). */
export class EventsListener {
  #listener: (() => void) | undefined;
  /** Other instances' commits on this store, heard over LISTEN (notify.ts). */
  readonly #notice: EventsNotice;

  constructor(notice: EventsNotice) {
    this.#notice = notice;
  }

  /** `listener` also hears of other instances' commits that queued events on this store. */
  set(listener: () => void): void {
    this.#listener = listener;
    this.#notice.listen(this.tell);
  }

  /** Tells the listener; its failure is not the create's. */
  readonly tell = (): void => {
    try {
      this.#listener?.();
    } catch {
      // The dispatcher polls anyway.
    }
  };
}

/**
 * The outbox on PostgreSQL: claims, results and the sweep of webhook events, for every instance on the
 * store. Every due and lease time comes from the database's clock (now()), so instances agree.
 */
export class PostgresOutbox implements OutboxStore {
  readonly #d: Dialect;
  readonly #connections: Connections;
  readonly #events: EventsListener;
  readonly #backlog: string;

  constructor(d: Dialect, connections: Connections, events: EventsListener, backlog: string) {
    this.#d = d;
    this.#connections = connections;
    this.#events = events;
    this.#backlog = backlog;
  }

  onEventsQueued(listener: () => void): void {
    this.#events.set(listener);
  }

  /** One statement, in turns across users and endpoints (see sql/claim.ts, also for its locking). */
  async claimDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (request.limit <= 0 || request.perEndpoint <= 0) return [];
    const { rows } = await this.#connections.query<ClaimRow & { attempts: number }>('webhook_claim', POSTGRES_CLAIM,
      [request.instance, request.busy, perEndpoint(request), request.limit, request.leaseMs]);
    return rows.map((r) => claimedOf(this.#d, r, r.attempts)).sort((a, b) => a.seq - b.seq);
  }

  /**
   * One transaction. An event changes only while this instance's claim of this attempt holds it
   * (leased_by, attempt count): a result that arrives after the lease ended and another instance claimed
   * the event again leaves that claim alone. Every attempt made is recorded while its endpoint exists,
   * stale ones too: the receiver did get the request.
   */
  async recordAttempts(instance: string, results: readonly AttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    const sorted = [...results].sort((a, b) => a.at.getTime() - b.at.getTime());
    const col = <T>(f: (r: AttemptResult) => T) => sorted.map(f);
    const seqs = col((r) => r.delivery.seq);
    const attempts = col((r) => r.delivery.attempt);
    await this.#connections.transaction(async (query) => {
      // Holds off a delete of these endpoints until this commits (see deleteWebhook), so no attempt is
      // recorded for an endpoint that is gone.
      await query(
        'webhook_record_lock',
        `SELECT 1 FROM webhook_endpoints
         WHERE id IN (SELECT endpoint_id FROM webhook_deliveries WHERE seq = ANY($1::bigint[])) FOR KEY SHARE`,
        [seqs],
      );
      const { rows: gone } = await query<{ endpoint_id: string }>(
        'webhook_record_update',
        `UPDATE webhook_deliveries d
         SET state = u.state,
             next_attempt_at = CASE WHEN u.state = 'pending' THEN now() + u.retry_ms * interval '1 millisecond' END,
             leased_by = NULL,
             finished_at = CASE WHEN u.state = 'pending' THEN NULL ELSE now() END
         FROM unnest($2::bigint[], $3::int[], $4::text[], $5::float8[], $6::text[])
              AS u(seq, attempt, state, retry_ms, outcome)
         WHERE d.seq = u.seq AND d.attempts = u.attempt AND d.leased_by = $1 AND d.state = 'pending'
         RETURNING CASE WHEN u.outcome = 'gone' THEN d.endpoint_id END AS endpoint_id`,
        [instance, seqs, attempts, col((r) => stateAfter(r.outcome)), col((r) => r.retryInMs ?? 0), col((r) => r.outcome)],
      );
      const goneEndpoints = [...new Set(gone.flatMap((r) => (r.endpoint_id === null ? [] : [r.endpoint_id])))];
      if (goneEndpoints.length > 0) {
        await query(
          'webhook_record_gone',
          `WITH ep AS (
             UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2
             WHERE id = ANY($1::text[]) AND disabled_at IS NULL RETURNING id
           )
           UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, leased_by = NULL, finished_at = now()
           WHERE endpoint_id = ANY($1::text[]) AND state = 'pending'`,
          [goneEndpoints, GONE_REASON],
        );
      }
      await query(
        'webhook_record_attempts',
        `INSERT INTO webhook_attempts (endpoint_id, event_id, plant_id, owner, attempt, status, error, at, state, next_attempt_at, test)
         SELECT d.endpoint_id, d.event_id, d.plant_id, d.owner, u.attempt, u.status, u.error, u.at, u.state,
                CASE WHEN u.state = 'pending' THEN now() + u.retry_ms * interval '1 millisecond' END, d.test
         FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], $6::text[], $7::float8[])
              WITH ORDINALITY AS u(seq, attempt, status, error, at, state, retry_ms, ord)
         JOIN webhook_deliveries d ON d.seq = u.seq
         ORDER BY u.ord`,
        [seqs, attempts, col((r) => r.status), col((r) => r.error), col((r) => r.at), col((r) => stateAfter(r.outcome)),
          col((r) => r.retryInMs ?? 0)],
      );
    });
  }

  async releaseDeliveries(instance: string, deliveries: readonly ClaimedDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.#connections.query(
      'webhook_release',
      `UPDATE webhook_deliveries d
       SET attempts = d.attempts - 1, next_attempt_at = now(), leased_by = NULL
       FROM unnest($2::bigint[], $3::int[]) AS u(seq, attempt)
       WHERE d.seq = u.seq AND d.attempts = u.attempt AND d.leased_by = $1 AND d.state = 'pending'`,
      [instance, deliveries.map((d) => d.seq), deliveries.map((d) => d.attempt)],
    );
  }

  async sweepWebhooks(before: Date): Promise<number> {
    const { rows } = await this.#connections.query<{ n: number }>(
      'webhook_sweep',
      `WITH d AS (
         DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1 RETURNING 1
       ), a AS (
         DELETE FROM webhook_attempts WHERE at < $1
       )
       SELECT count(*)::int AS n FROM d`,
      [before],
    );
    await this.#connections.query('webhook_withdraw', WITHDRAW, []);
    await this.#connections.query('webhook_erase_secrets', ERASE_SECRETS, []);
    return rows[0]?.n ?? 0;
  }

  async webhookBacklog(cap: number): Promise<WebhookBacklog> {
    const { rows } = await this.#connections.query<BacklogRow>('webhook_backlog', this.#backlog, [cap]);
    return backlogOf(this.#d, rows[0], cap);
  }
}
