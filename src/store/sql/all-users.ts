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
 * Each is written once for both dialects (dialect.ts): the current time is the dialect's `now`.
 */

import { raw, sql, type Dialect, type Part, type Sql } from './dialect.js';

/** True when the user named by `user` holds an active admin token now. */
export function holdsAdminToken(d: Dialect, user: Part): Sql {
  return sql`EXISTS (SELECT 1 FROM tokens t WHERE t.username = ${user} AND t.admin = ${d.true}
    AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ${d.now}))`;
}

/**
 * Whether endpoint `e` receives a plant of `owner`: its user's plants always, anyone's while it is an
 * all-users endpoint whose user holds an admin token.
 */
export function receives(d: Dialect, owner: Part): Sql {
  return sql`(e.username = ${owner} OR (e.all_users = ${d.true} AND ${holdsAdminToken(d, raw('e.username'))}))`;
}

/**
 * The endpoint's `all_users` as listed: true only while it receives every user's plants (registered for
 * all users, and its user holds an active admin token). `table` names the endpoint row (a table or alias).
 */
export function listedAllUsers(d: Dialect, table: string): Sql {
  return sql`(${raw(table)}.all_users = ${d.true} AND ${holdsAdminToken(d, raw(`${table}.username`))}) AS all_users`;
}

/**
 * Fails the pending events of other users queued for all-users endpoints whose user no longer holds an
 * active admin token; with `user`, that user's endpoints only. An event whose owner
 * is unknown (queued before owners were recorded, or imported) counts as another user's. An attempt
 * already under way still ends (its result is recorded; the event stays failed).
 */
export function withdrawEvents(d: Dialect, user: Part | null): Sql {
  const other = raw(d.backend === 'sqlite' ? 'd.owner IS NOT e.username' : 'd.owner IS DISTINCT FROM e.username');
  const ofUser = user === null ? raw('') : sql` AND e.username = ${user}`;
  return sql`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, leased_by = NULL, finished_at = ${d.now}
    WHERE state = 'pending' AND seq IN (
      SELECT d.seq FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id AND d.state = 'pending'
      WHERE e.all_users = ${d.true}${ofUser} AND ${other}
        AND NOT ${holdsAdminToken(d, raw('e.username'))})`;
}
