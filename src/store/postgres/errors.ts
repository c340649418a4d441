import pg from 'pg';
import { StoreUnavailableError } from '../store.js';

/**
 * Errors of a query on a connection we hold that mean "the database is not reachable or not serving
 * now" rather than "this request or our code is wrong": anything that did not come from the server as a
 * SQL error (reset, timed out, terminated), and server errors of classes 08 (connection), 53 (resources),
 * 57 (operator intervention, statement timeout) and 25006 (read-only: a failover in progress). Failing
 * to get a connection at all is always "unavailable" (see `#query`), whatever the reason.
 */
export function storeError(error: unknown): unknown {
  if (error instanceof pg.DatabaseError) {
    const sqlClass = error.code?.slice(0, 2);
    return sqlClass === '08' || sqlClass === '53' || sqlClass === '57' || error.code === '25006'
      ? new StoreUnavailableError(error)
      : error;
  }
  if (error instanceof TypeError || error instanceof RangeError) return error;
  return new StoreUnavailableError(error);
}

/**
 * node-postgres's words when the server answers a TLS request (sslmode, ssl=true) with "no": it has
 * no code of its own (pg/lib/connection.js). libpq fails the same way, at once, for sslmode=require.
 */
const NO_TLS = 'The server does not support SSL connections';

/**
 * At start-up only: the connection was turned down for a reason that waiting will not change, because
 * the configuration is wrong: the login (class 28: unknown role, bad password, NOLOGIN), the database
 * name (3D000), the CONNECT privilege (42501), or TLS asked of a server that has none. Start-up then
 * fails at once, saying so. At run time the same errors are 503: the configuration worked before, so an
 * operator changed something and may change it back.
 */
export function misconfigured(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return error.code?.startsWith('28') === true || error.code === '3D000' || error.code === '42501';
  return error instanceof Error && error.message === NO_TLS;
}
