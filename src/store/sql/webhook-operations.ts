import { listedAllUsers } from './all-users.js';
import { param, sql, type Dialect, type Sql } from './dialect.js';
import { eventIdSql } from './wire.js';

/**
 * The statements of the webhook operations (PATCH, rotate-secret, resend, recover, test), written once for
 * both dialects with their values (dialect.ts): `id` the endpoint's, `user` the caller's (null for an
 * admin), `owner` whose events (ownerFilter), `now` where the dialect takes the time as a value (SQLite).
 */

const ID = param('id');
/** Typed where it may be NULL, which alone tells PostgreSQL no type. */
const USER = param('user', 'text');
const OWNER = param('owner', 'text');

/** The endpoint of `id` (of `user`, any user's when it is NULL), with its reach now (all_users: see all-users.ts). */
export function findEndpointSql(d: Dialect): Sql {
  return sql`SELECT id, username, disabled_at, ${listedAllUsers(d, 'webhook_endpoints')}
    FROM webhook_endpoints WHERE id = ${ID} AND (${USER} IS NULL OR username = ${USER})`;
}

export interface FoundEndpointRow {
  readonly id: string;
  readonly username: string;
  readonly disabled_at: unknown;
  readonly all_users: unknown;
}

/**
 * Whose events of the endpoint an operation may queue again (the `owner` value of the statements below;
 * null: anyone's): those it may still receive (an all-users endpoint whose user holds no admin token now
 * receives its own user's only), and of those a caller that is not admin sees only its own plants'.
 */
export function ownerFilter(endpoint: { readonly username: string; readonly reach: boolean }, user: string | null): string | null {
  return endpoint.reach && user === null ? null : endpoint.username;
}

/**
 * PATCH: what is given changes, the rest stays (values `url`, `description`, the flags `setDescription` and
 * `enable`, and `disable`, the reason). Disabling keeps an earlier disabling's time and reason; enabling
 * clears both. `columns` are the endpoint's listed columns (endpointColumns).
 */
export function updateEndpointSql(d: Dialect, columns: Sql): Sql {
  const enable = param('enable', 'boolean');
  const disable = param('disable', 'text');
  return sql`UPDATE webhook_endpoints SET
      url = coalesce(${param('url', 'text')}, url),
      description = CASE WHEN ${param('setDescription', 'boolean')} THEN ${param('description', 'text')} ELSE description END,
      disabled_at = CASE WHEN ${enable} THEN NULL WHEN ${disable} IS NOT NULL THEN coalesce(disabled_at, ${d.now}) ELSE disabled_at END,
      disabled_reason = CASE WHEN ${enable} THEN NULL WHEN ${disable} IS NOT NULL THEN coalesce(disabled_reason, ${disable})
        ELSE disabled_reason END
    WHERE id = ${ID} AND (${USER} IS NULL OR username = ${USER})
    RETURNING ${columns}`;
}

/** Fails the endpoint's pending events (it was disabled): claims skip a disabled endpoint, so they would wait for ever. */
export function failPendingSql(d: Dialect): Sql {
  return sql`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, leased_by = NULL, finished_at = ${d.now}
    WHERE endpoint_id = ${ID} AND state = 'pending'`;
}

/**
 * The new `secret` in, the current one kept as the previous for `overlap` ms when that is above 0.
 * Answers when the previous one stops signing (now, without an overlap).
 */
export function rotateSecretSql(d: Dialect): Sql {
  const overlap = param('overlap', 'float8');
  return sql`UPDATE webhook_endpoints SET
      previous_secret = CASE WHEN ${overlap} > 0 THEN secret END,
      previous_secret_expires_at = CASE WHEN ${overlap} > 0 THEN ${d.after(d.now, overlap)} END,
      secret = ${param('secret')}
    WHERE id = ${ID} AND (${USER} IS NULL OR username = ${USER})
    RETURNING coalesce(previous_secret_expires_at, ${d.now}) AS expires_at`;
}

/** A previous secret past its overlap is erased (the sweep); none signs after its end anyway (the sender checks). */
export function eraseExpiredSecretsSql(d: Dialect): Sql {
  return sql`UPDATE webhook_endpoints SET previous_secret = NULL, previous_secret_expires_at = NULL
    WHERE previous_secret_expires_at IS NOT NULL AND previous_secret_expires_at <= ${d.now}`;
}

/**
 * The event's row (`event`, its id), found through the indexes: a finished one by
 * webhook_deliveries_finished_event, a pending one within its endpoint's queue (webhook_deliveries_due).
 */
export function findEventSql(): Sql {
  const where = sql`endpoint_id = ${ID} AND event_id = ${param('event')} AND (${OWNER} IS NULL OR owner = ${OWNER})`;
  return sql`SELECT seq, state, leased_by FROM webhook_deliveries WHERE ${where} AND state <> 'pending'
    UNION ALL SELECT seq, state, leased_by FROM webhook_deliveries WHERE ${where} AND state = 'pending'`;
}

export interface FoundEventRow {
  readonly seq: number | string;
  readonly state: string;
  readonly leased_by: string | null;
}

/**
 * Queues one event again (by seq): pending and due now; a finished one with its retry schedule started
 * over from the attempts made so far, and counted as queued by an operation. One claimed now (an attempt
 * under way, whose result may not be recorded yet though the receiver has it) loses its claim: it is
 * attempted again, and the result of the attempt under way is recorded as a stale one is (listed,
 * changing nothing), as after an expired lease. A pending one was queued already and stays as it was
 * counted.
 */
export function requeueEventSql(d: Dialect): Sql {
  return sql`UPDATE webhook_deliveries SET
      round_start = CASE WHEN state = 'pending' THEN round_start ELSE attempts END,
      by_operation = CASE WHEN state = 'pending' THEN by_operation ELSE ${d.true} END,
      state = 'pending', next_attempt_at = ${d.now}, finished_at = NULL, leased_by = NULL
    WHERE seq = ${param('seq')}`;
}

/** The failed events of the endpoint created at or after `since` that recoverEventsSql queues again. */
const RECOVERABLE = sql`endpoint_id = ${ID} AND state = 'failed' AND created_at >= ${param('since')} AND (${OWNER} IS NULL OR owner = ${OWNER})`;

/** How many events recoverEventsSql would queue again (through webhook_deliveries_failed). */
export function countRecoverableSql(d: Dialect): Sql {
  return sql`SELECT ${d.count} AS n FROM webhook_deliveries WHERE ${RECOVERABLE}`;
}

/** Every failed event of the endpoint created at or after `since`, queued again as requeueEventSql does. */
export function recoverEventsSql(d: Dialect): Sql {
  return sql`UPDATE webhook_deliveries SET round_start = attempts, by_operation = ${d.true}, state = 'pending', next_attempt_at = ${d.now},
      finished_at = NULL, leased_by = NULL
    WHERE ${RECOVERABLE}`;
}

/**
 * The events queued by operations (test, resend, recover) still pending on every endpoint of `user`: what
 * WEBHOOK_MAX_QUEUED_PER_USER bounds. Read from webhook_deliveries_by_operation, which holds only those
 * (its condition is written as the index's is, so that both planners use it).
 */
export function countQueuedByOperationsSql(d: Dialect): Sql {
  const flagged = d.backend === 'sqlite' ? sql`d.by_operation = 1` : sql`d.by_operation`;
  return sql`SELECT ${d.count} AS n FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
    WHERE e.username = ${param('user')} AND d.state = 'pending' AND ${flagged}`;
}

/**
 * A test event for one endpoint: its user's (`owner`, so that the endpoint's user sees it in the history),
 * plant 0, flagged as a test and as queued by an operation, with its `body`.
 */
export function insertTestEventSql(d: Dialect): Sql {
  return sql`INSERT INTO webhook_deliveries
      (event_id, endpoint_id, plant_id, owner, body, state, attempts, next_attempt_at, created_at, test, by_operation)
    VALUES (${eventIdSql(d, d.nowMs)}, ${ID}, 0, ${param('owner')}, ${param('body')}, 'pending', 0, ${d.now}, ${d.now}, ${d.true}, ${d.true})
    RETURNING event_id`;
}
