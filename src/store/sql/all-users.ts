/**
 * The rule for all-users endpoints, in SQL both backends share. Such an endpoint (registered with an
 * admin token, an admin JWT or `webhook add --all`) belongs to one user, but its reach is an admin's:
 * so it gets other users' plants only while its user holds an active admin token (admin, not revoked,
 * not expired), checked when each plant is stored; and its other users' events still pending when that
 * stops (the last admin token revoked, or expired) are failed, not delivered. Its own user's plants it
 * always gets, as any endpoint does. The store knows no other admin-ness: an identity provider's
 * `plants:admin` lasts as long as one JWT, and nothing tells plantstore when the provider withdraws it.
 * (Who may read other users' events in an endpoint's history is the caller's admin-ness, as for plants:
 * see the deliveries statements.)
 *
 * `now` is the backend's current time as SQL: a parameter on SQLite (milliseconds, as every SQLite time
 * is made), now() on PostgreSQL.
 */

type Backend = 'sqlite' | 'postgres';

const TRUE: Record<Backend, string> = { sqlite: '1', postgres: 'true' };

/** True when the user named by the SQL expression `user` holds an active admin token at `now`. */
export function holdsAdminToken(backend: Backend, user: string, now: string): string {
  return `EXISTS (SELECT 1 FROM tokens t WHERE t.username = ${user} AND t.admin = ${TRUE[backend]}
    AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ${now}))`;
}

/**
 * Whether endpoint `e` receives a plant of `owner` (SQL expressions): its user's plants always, anyone's
 * while it is an all-users endpoint whose user holds an admin token.
 */
export function receives(backend: Backend, owner: string, now: string): string {
  return `(e.username = ${owner} OR (e.all_users = ${TRUE[backend]} AND ${holdsAdminToken(backend, 'e.username', now)}))`;
}

/**
 * The endpoint's `all_users` as listed: true only while it receives every user's plants (registered for
 * all users, and its user holds an active admin token). `table` names the endpoint row (a table or alias).
 */
export function listedAllUsers(backend: Backend, table: string, now: string): string {
  return `(${table}.all_users = ${TRUE[backend]} AND ${holdsAdminToken(backend, `${table}.username`, now)}) AS all_users`;
}

/**
 * Fails the pending events of other users queued for all-users endpoints whose user no longer holds an
 * active admin token; with `user` (an SQL expression), that user's endpoints only. An event whose owner
 * is unknown (queued before owners were recorded, or imported) counts as another user's. An attempt
 * already under way still ends (its result is recorded; the event stays failed).
 */
export function withdrawEvents(backend: Backend, now: string, user: string | null): string {
  const other = backend === 'sqlite' ? 'd.owner IS NOT e.username' : 'd.owner IS DISTINCT FROM e.username';
  return `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, leased_by = NULL, finished_at = ${now}
    WHERE state = 'pending' AND seq IN (
      SELECT d.seq FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id AND d.state = 'pending'
      WHERE e.all_users = ${TRUE[backend]}${user === null ? '' : ` AND e.username = ${user}`} AND ${other}
        AND NOT ${holdsAdminToken(backend, 'e.username', now)})`;
}
