/**
 * The order a webhook claim takes due events in, the same on both backends: in turns. A claim takes every
 * user's oldest due event first (oldest first among them), then every user's second, and so on; a user's
 * turns go round its endpoints the same way. Taking the oldest due events first instead let one
 * endpoint's backlog (a dead receiver's, retried again and again) fill every claim, so that another
 * endpoint's event, or a retry that had come due, waited until that backlog was worked off.
 *
 * `candidates` gives (seq, endpoint_id, username, next_attempt_at) for each endpoint's first due events:
 * a bounded index range per endpoint, so a backlog is never read whole. The CTE `turns` it opens has
 * (seq, next_attempt_at, turn); the claim ends with `ORDER BY turn, next_attempt_at, seq LIMIT ...`.
 */
function turns(candidates: string): string {
  return `WITH candidates AS (${candidates}),
  endpoint_turns AS (
    SELECT seq, username, next_attempt_at,
           row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, seq) AS endpoint_turn
    FROM candidates
  ),
  turns AS (
    SELECT seq, next_attempt_at,
           row_number() OVER (PARTITION BY username ORDER BY endpoint_turn, next_attempt_at, seq) AS turn
    FROM endpoint_turns
  )`;
}

/**
 * The endpoint's secrets as a claim reads them, in the claim's own statement: what the attempt is signed
 * with is what the endpoint held when it was claimed, never a mix of before and after a rotation. The
 * previous secret only while its overlap runs; the sender checks its end again when it signs.
 */
function claimSecrets(now: string): string {
  return `e.secret, CASE WHEN e.previous_secret_expires_at > ${now} THEN e.previous_secret END AS previous_secret,
  e.previous_secret_expires_at`;
}

/** SQLite (one process claims; no row locks): @now, @busy (a JSON array), @perEndpoint, @limit. */
export const SQLITE_DUE = `${turns(
  `SELECT x.seq, x.endpoint_id, e.username, x.next_attempt_at
   FROM webhook_endpoints e JOIN webhook_deliveries x ON x.seq IN (
     SELECT y.seq FROM webhook_deliveries y
     WHERE y.endpoint_id = e.id AND y.state = 'pending' AND y.next_attempt_at <= @now
     ORDER BY y.next_attempt_at, y.seq LIMIT @perEndpoint
   )
   WHERE e.disabled_at IS NULL AND e.id NOT IN (SELECT value FROM json_each(@busy))`,
)}
SELECT d.seq, d.event_id, d.endpoint_id, e.username, e.url, ${claimSecrets('@now')}, CAST(d.plant_id AS TEXT) AS plant_id, d.body,
  d.attempts, d.round_start, d.test
FROM turns t JOIN webhook_deliveries d ON d.seq = t.seq JOIN webhook_endpoints e ON e.id = d.endpoint_id
ORDER BY t.turn, t.next_attempt_at, t.seq LIMIT @limit`;

/**
 * PostgreSQL, one statement: $1 instance, $2 busy endpoint ids, $3 per endpoint, $4 limit, $5 lease (ms).
 * The candidates are read without locks; only the events picked are locked, FOR UPDATE SKIP LOCKED in
 * turn order with the LIMIT above the lock, so an event another instance is claiming right now is passed
 * over for the next one, and one instance's claim never holds rows it does not take (locking each
 * endpoint's whole candidate range hid every due event from the other instances while it ran). An event
 * claimed and committed a moment ago is rechecked when locked and is no longer due (its next_attempt_at is
 * its lease's end).
 */
export const POSTGRES_CLAIM = `${turns(
  `SELECT x.seq, e.id AS endpoint_id, e.username, x.next_attempt_at
   FROM webhook_endpoints e CROSS JOIN LATERAL (
     SELECT seq, next_attempt_at FROM webhook_deliveries
     WHERE endpoint_id = e.id AND state = 'pending' AND next_attempt_at <= now()
     ORDER BY next_attempt_at, seq LIMIT $3
   ) x
   WHERE e.disabled_at IS NULL AND e.id <> ALL($2::text[])`,
)},
  picked AS (
    SELECT d.seq FROM turns t JOIN webhook_deliveries d ON d.seq = t.seq
    WHERE d.state = 'pending' AND d.next_attempt_at <= now()
    ORDER BY t.turn, t.next_attempt_at, t.seq LIMIT $4
    FOR UPDATE OF d SKIP LOCKED
  )
UPDATE webhook_deliveries d
SET attempts = d.attempts + 1, next_attempt_at = now() + $5::float8 * interval '1 millisecond', leased_by = $1
FROM picked p, webhook_endpoints e
WHERE d.seq = p.seq AND e.id = d.endpoint_id
RETURNING d.seq, d.event_id, d.endpoint_id, e.username, e.url, ${claimSecrets('now()')}, d.plant_id, d.body, d.attempts,
  d.round_start, d.test`;
