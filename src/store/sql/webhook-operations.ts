import { listedAllUsers } from './all-users.js';
import { eventIdSql } from './wire.js';

/**
 * The statements of the webhook operations (PATCH, rotate-secret, resend, recover, test), written once for
 * both backends. Each takes its values as SQL expressions: SQLite's named parameters (`@id`), PostgreSQL's
 * numbered ones with their types (`$1::text`); `now` is the backend's current time (a parameter in
 * milliseconds on SQLite, now() on PostgreSQL), as in all-users.ts.
 */

type Backend = 'sqlite' | 'postgres';

const TRUE: Record<Backend, string> = { sqlite: '1', postgres: 'true' };

/** The endpoint of `id` (of `user`, any user's when it is NULL), with its reach now (all_users: see all-users.ts). */
export function findEndpointSql(backend: Backend, now: string, p: { id: string; user: string }): string {
  return `SELECT id, username, disabled_at, ${listedAllUsers(backend, 'webhook_endpoints', now)}
    FROM webhook_endpoints WHERE id = ${p.id} AND (${p.user} IS NULL OR username = ${p.user})`;
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
 * PATCH: what is given changes, the rest stays. Disabling keeps an earlier disabling's time and reason;
 * enabling clears both. `columns` are the endpoint's listed columns (endpointColumns).
 */
export function updateEndpointSql(
  columns: string,
  now: string,
  p: { id: string; user: string; url: string; description: string; setDescription: string; enable: string; disable: string },
): string {
  return `UPDATE webhook_endpoints SET
      url = coalesce(${p.url}, url),
      description = CASE WHEN ${p.setDescription} THEN ${p.description} ELSE description END,
      disabled_at = CASE WHEN ${p.enable} THEN NULL WHEN ${p.disable} IS NOT NULL THEN coalesce(disabled_at, ${now}) ELSE disabled_at END,
      disabled_reason = CASE WHEN ${p.enable} THEN NULL WHEN ${p.disable} IS NOT NULL THEN coalesce(disabled_reason, ${p.disable})
        ELSE disabled_reason END
    WHERE id = ${p.id} AND (${p.user} IS NULL OR username = ${p.user})
    RETURNING ${columns}`;
}

/** Fails the endpoint's pending events (it was disabled): claims skip a disabled endpoint, so they would wait for ever. */
export function failPendingSql(now: string, id: string): string {
  return `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, leased_by = NULL, finished_at = ${now}
    WHERE endpoint_id = ${id} AND state = 'pending'`;
}

/**
 * The new secret in, the current one kept as the previous until `expires` when `overlap` (ms) is above 0.
 * Answers when the previous one stops signing (now, without an overlap).
 */
export function rotateSecretSql(now: string, expires: string, p: { id: string; user: string; secret: string; overlap: string }): string {
  return `UPDATE webhook_endpoints SET
      previous_secret = CASE WHEN ${p.overlap} > 0 THEN secret END,
      previous_secret_expires_at = CASE WHEN ${p.overlap} > 0 THEN ${expires} END,
      secret = ${p.secret}
    WHERE id = ${p.id} AND (${p.user} IS NULL OR username = ${p.user})
    RETURNING coalesce(previous_secret_expires_at, ${now}) AS expires_at`;
}

/** A previous secret past its overlap is erased (the sweep); none signs after its end anyway (the sender checks). */
export function eraseExpiredSecretsSql(now: string): string {
  return `UPDATE webhook_endpoints SET previous_secret = NULL, previous_secret_expires_at = NULL
    WHERE previous_secret_expires_at IS NOT NULL AND previous_secret_expires_at <= ${now}`;
}

/**
 * The event's row, found through the indexes: a finished one by webhook_deliveries_finished_event, a
 * pending one within its endpoint's queue (webhook_deliveries_due).
 */
export function findEventSql(p: { id: string; event: string; owner: string }): string {
  const where = `endpoint_id = ${p.id} AND event_id = ${p.event} AND (${p.owner} IS NULL OR owner = ${p.owner})`;
  return `SELECT seq, state, leased_by FROM webhook_deliveries WHERE ${where} AND state <> 'pending'
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
export function requeueEventSql(backend: Backend, now: string, seq: string): string {
  return `UPDATE webhook_deliveries SET
      round_start = CASE WHEN state = 'pending' THEN round_start ELSE attempts END,
      by_operation = CASE WHEN state = 'pending' THEN by_operation ELSE ${TRUE[backend]} END,
      state = 'pending', next_attempt_at = ${now}, finished_at = NULL, leased_by = NULL
    WHERE seq = ${seq}`;
}

/** The failed events of the endpoint created at or after `since` that recoverEventsSql queues again. */
const recoverable = (p: { id: string; since: string; owner: string }) =>
  `endpoint_id = ${p.id} AND state = 'failed' AND created_at >= ${p.since} AND (${p.owner} IS NULL OR owner = ${p.owner})`;

/** How many events recoverEventsSql would queue again (through webhook_deliveries_failed). */
export function countRecoverableSql(p: { id: string; since: string; owner: string }): string {
  return `SELECT count(*) AS n FROM webhook_deliveries WHERE ${recoverable(p)}`;
}

/** Every failed event of the endpoint created at or after `since`, queued again as requeueEventSql does. */
export function recoverEventsSql(backend: Backend, now: string, p: { id: string; since: string; owner: string }): string {
  return `UPDATE webhook_deliveries SET round_start = attempts, by_operation = ${TRUE[backend]}, state = 'pending', next_attempt_at = ${now},
      finished_at = NULL, leased_by = NULL
    WHERE ${recoverable(p)}`;
}

/**
 * The events queued by operations (test, resend, recover) still pending on every endpoint of `user`: what
 * WEBHOOK_MAX_QUEUED_PER_USER bounds. Read from webhook_deliveries_by_operation, which holds only those
 * (its condition is written as the index's is, so that both planners use it).
 */
export function countQueuedByOperationsSql(backend: Backend, user: string): string {
  const flagged = backend === 'sqlite' ? 'd.by_operation = 1' : 'd.by_operation';
  return `SELECT count(*) AS n FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
    WHERE e.username = ${user} AND d.state = 'pending' AND ${flagged}`;
}

/**
 * A test event for one endpoint: its user's (so that the endpoint's user sees it in the history), plant 0,
 * flagged as a test and as queued by an operation. `nowMs` is the time in milliseconds, as SQL, for the
 * event id.
 */
export function insertTestEventSql(backend: Backend, now: string, nowMs: string, p: { id: string; owner: string; body: string }): string {
  return `INSERT INTO webhook_deliveries
      (event_id, endpoint_id, plant_id, owner, body, state, attempts, next_attempt_at, created_at, test, by_operation)
    VALUES (${eventIdSql(backend, nowMs)}, ${p.id}, 0, ${p.owner}, ${p.body}, 'pending', 0, ${now}, ${now}, ${TRUE[backend]}, ${TRUE[backend]})
    RETURNING event_id`;
}
