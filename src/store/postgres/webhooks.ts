import type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint } from '../../domain/webhook.js';
import type { Dialect } from '../sql/statements.js';
import {
  attemptOf, deleteEndpointAttempts, deleteEndpointDeliveries, endpointColumns, endpointOf,
  type AttemptRow, type EndpointRow,
} from '../sql/webhooks.js';
import type { WebhookStore } from '../store.js';
import type { Connections } from './pool.js';

/**
 * The webhooks facet on PostgreSQL: the endpoints and their attempts. Every time comes from the
 * database's clock (now()), so instances agree.
 */
export class PostgresWebhooks implements WebhookStore {
  readonly #d: Dialect;
  readonly #connections: Connections;
  readonly #columns: string;

  constructor(d: Dialect, connections: Connections) {
    this.#d = d;
    this.#connections = connections;
    this.#columns = endpointColumns(d, 'now()');
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
      await query('webhook_delete_deliveries', deleteEndpointDeliveries(this.#d), [id]);
      await query('webhook_delete_attempts', deleteEndpointAttempts(this.#d), [id]);
      return true;
    });
  }

  async listDeliveryAttempts(endpointId: string, user: string | null, limit: number): Promise<DeliveryAttempt[] | null> {
    const { rows } = await this.#connections.query<AttemptRow & { seq: string | null }>(
      'webhook_attempts_list',
      `SELECT a.seq, a.event_id, a.plant_id, a.attempt, a.status, a.error, a.at, a.state, a.next_attempt_at
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
}
