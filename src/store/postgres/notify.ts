import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';

/** The channel of every plantstore store on a database; the payload says which store (schema) and handle. */
const CHANNEL = 'plantstore_events';
/** The live feed's: a commit wrote plants' events (the payload also gives its transaction, see notifyFeedSql). */
const FEED_CHANNEL = 'plantstore_feed';
/** Bound on making the listening connection, as on the pool's. */
const CONNECT_TIMEOUT_MS = 3000;
/** After a failure the connection is made again after this, doubling up to the maximum, while it fails. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;
/**
 * TCP keepalive on the listening connection starts after this much quiet: it only ever receives, so a
 * peer that vanished without closing it (a failover, a network cut) is found by keepalive, not by a
 * query failing. Until then the poll finds other instances' events.
 */
const KEEPALIVE_DELAY_MS = 10_000;

/**
 * The statement part that tells the other instances on this store, in the same transaction, that events
 * were queued: one notification per commit that queued any (PostgreSQL sends it on commit, and a
 * rolled-back transaction sends none), whatever the number of events. `events` names the CTE of the
 * inserted events; `token` is the placeholder of the handle's token (EventsNotice.token). The payload
 * is `<token>:<schema>`, so that stores in other schemas of the database, and the handle that queued
 * the events (told already, by its own commit), pass over it.
 */
export function notifyEventsSql(events: string, token: string): string {
  return `SELECT pg_notify('${CHANNEL}', ${token}::text || ':' || coalesce(current_schema(), '')) WHERE EXISTS (SELECT 1 FROM ${events})`;
}

/**
 * As notifyEventsSql, for the live feed: one notification per commit that wrote plant events (`rows`
 * names the CTE of the plants created or deleted), with the writing transaction's id, so that a reader
 * knows how far the log must be final before it holds them (FeedStore.onFeedChanged). The payload is
 * `<token>:<tx>:<schema>`.
 */
export function notifyFeedSql(rows: string, token: string): string {
  return `SELECT pg_notify('${FEED_CHANNEL}', ${token}::text || ':' || pg_current_xact_id()::text || ':' || coalesce(current_schema(), '')) WHERE EXISTS (SELECT 1 FROM ${rows})`;
}

export interface EventsNoticeOptions {
  /** The connection string the pool uses (never logged: it may hold a password). */
  readonly connectionString: string;
  readonly logger: Logger;
}

/**
 * Other instances' new events, heard at once: a dedicated connection, outside the pool, that LISTENs on
 * the channel notifyEventsSql notifies, and calls the store's onEventsQueued listener when an instance
 * on the same store queued events. A notification is a hint, never data: the dispatcher still claims
 * from the table, and its poll stays for what a lost notification (a connection down) would miss.
 *
 * The connection is made when the store's listener is first set (a server's webhook worker starting;
 * the CLI's handles never make one), made again with backoff after an error, and closed with the store.
 */
export class EventsNotice {
  /** Marks this handle's own notifications, which it does not need. */
  readonly token = randomBytes(9).toString('base64url');
  readonly #options: EventsNoticeOptions;
  readonly #log: Logger;
  #onEvents: (() => void) | undefined;
  #onFeed: ((tx: bigint) => void) | undefined;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = FIRST_RETRY_MS;
  /** Set while the connection is down after having failed: one warning per outage, and a wake-up when back. */
  #failing = false;
  #closed = false;

  constructor(options: EventsNoticeOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: 'webhooks' });
  }

  /** Calls `onEvents` when another instance on this store queued events; a later call replaces it. */
  listen(onEvents: () => void): void {
    const first = this.#onEvents === undefined && this.#onFeed === undefined;
    this.#onEvents = onEvents;
    if (first && !this.#closed) void this.#connect();
  }

  /** Calls `onFeed` with the transaction when another instance on this store wrote plant events; a later call replaces it. */
  listenFeed(onFeed: (tx: bigint) => void): void {
    const first = this.#onEvents === undefined && this.#onFeed === undefined;
    this.#onFeed = onFeed;
    if (first && !this.#closed) void this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
      application_name: 'plantstore',
    });
    this.#client = client;
    let lost = false;
    const fail = (err: unknown): void => {
      if (lost) return;
      lost = true;
      if (this.#client === client) this.#client = undefined;
      void client.end().catch(() => undefined);
      if (this.#closed) return;
      if (!this.#failing) {
        this.#failing = true;
        this.#log.warn({ err }, 'the connection that hears other instances\' new webhook events failed; making it again (the poll finds their events meanwhile)');
      }
      this.#retry = setTimeout(() => void this.#connect(), this.#retryMs);
      this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('the connection was closed')));
    try {
      await client.connect();
      // The schema the pool's connections use too: the same connection string sets the same search_path.
      const { rows } = await client.query<{ schema: string }>("SELECT coalesce(current_schema(), '') AS schema");
      const schema = rows[0]?.schema ?? '';
      client.on('notification', ({ channel, payload = '' }) => {
        // A token has no colon, nor has a transaction id; a schema name may have any character.
        const at = payload.indexOf(':');
        if (at < 0 || payload.slice(0, at) === this.token) return;
        if (channel === CHANNEL && payload.slice(at + 1) === schema) this.#onEvents?.();
        if (channel !== FEED_CHANNEL) return;
        const tx = payload.indexOf(':', at + 1);
        if (tx < 0 || payload.slice(tx + 1) !== schema) return;
        const digits = payload.slice(at + 1, tx);
        if (/^\d{1,20}$/.test(digits)) this.#onFeed?.(BigInt(digits));
      });
      await client.query(`LISTEN ${CHANNEL}`);
      await client.query(`LISTEN ${FEED_CHANNEL}`);
    } catch (err) {
      fail(err);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#retryMs = FIRST_RETRY_MS;
    if (this.#failing) {
      this.#failing = false;
      this.#log.info('hearing other instances\' new webhook events again');
      // Events queued while the connection was down were announced to nobody here: look now.
      this.#onEvents?.();
      this.#onFeed?.(0n);
    }
  }
}
