import type { FeedEvent, FeedPosition } from '../domain/feed.js';
import type { NewPlant, Plant } from '../domain/plant.js';
import type { NewTokenRecord, TokenRecord } from '../domain/token.js';
import type {
  AttemptResult, ClaimedDelivery, ClaimRequest, DeliveryAttempt, NewWebhookEndpoint, WebhookChange, WebhookEndpoint,
} from '../domain/webhook.js';

// Where the backends and wrappers implementing the Store's token methods find these types.
export type { NewTokenRecord, TokenRecord } from '../domain/token.js';

/** What a create did: stored it, found the identical plant already stored, or found a different one. */
export type CreateOutcome = 'created' | 'replayed' | 'conflict';

export interface ListQuery {
  /** The owner whose plants to list; null lists every owner's plants (admin). */
  readonly owner: string | null;
  readonly tag?: string | undefined;
  /** Position after which to continue, as returned in `PlantPage.next`. */
  readonly after?: number | undefined;
  readonly limit: number;
}

/**
 * A page of a list. A store may hand the same page object to several callers while it is valid (a
 * cached page), so nobody may change it; a reader may keep what it derives from it, keyed weakly by the
 * page, and a caching store's memory bound allows for one short text (up to 64 characters) per page
 * that has a next position.
 */
export interface PlantPage {
  readonly plants: readonly Plant[];
  /** Position of the last plant returned when more remain, else null. */
  readonly next: number | null;
  /**
   * `plants` as JSON text, when the store keeps it with the page (a cached page makes it once): exactly
   * what the list route's schema serializes, so a reader may send it as it is.
   */
  readonly json?: string;
  /** How many plants `json` holds, given with it (so that a reader need not parse it to count them). */
  readonly size?: number;
}

export interface RateCount {
  readonly count: number;
  readonly resetInMs: number;
}

/** The plants: created, listed, deleted. */
export interface PlantStore {
  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome>;
  /** Plants in creation order (oldest first). */
  listPlants(query: ListQuery): Promise<PlantPage>;
  /**
   * The page `listPlants(query)` would answer now, when this handle holds it in memory (the list cache,
   * wrappers/list-cache.ts): returned at once, without a promise. `undefined` when it holds no valid page for
   * the query (and always for a store without a list cache); the caller then asks `listPlants`. Throws
   * StoreUnavailableError, as `listPlants` rejects with it, when reads are refused now.
   */
  cachedPage(query: ListQuery): PlantPage | undefined;
  deletePlant(owner: string, id: bigint): Promise<boolean>;
}

/** The opaque tokens, by the hash of their secret. */
export interface TokenStore {
  createToken(token: NewTokenRecord): Promise<TokenRecord>;
  findTokenByHash(hash: string): Promise<TokenRecord | null>;
  /** In creation order; only `user`'s tokens when a user is given (GET /tokens for a token that is not admin). */
  listTokens(user?: string): Promise<TokenRecord[]>;
  /**
   * False when no such token exists or it was already revoked; with `user`, also when it is another
   * user's (DELETE /tokens/{id} for a token that is not admin).
   */
  revokeToken(id: number, user?: string): Promise<boolean>;
}

/** The rate limit's counters. */
export interface CounterStore {
  /**
   * Counts one event for `key` in the current fixed window of `windowMs` and returns the window's count
   * so far and the time until it ends. Every instance on one store shares the counts.
   */
  hit(key: string, windowMs: number): Promise<RateCount>;
}

/** What the server keeps secret in the store. */
export interface SecretStore {
  /**
   * The 32-byte key that seals pagination cursors: random, made once per store by the first handle that
   * asks, then the same for every handle and instance on it (and across restarts), so a cursor opens
   * wherever it is presented. Read once per handle.
   */
  cursorKey(): Promise<Buffer>;
}

// Webhooks (src/webhooks/). A create that stores a plant also queues, in the same transaction, one event
// per endpoint that receives it (not disabled; its user's, or registered for all users while that user
// holds an active admin token: see sql/all-users.ts): the transactional outbox. A replay, a conflict and
// a failed create queue nothing. Revoking a token, and the sweep, fail the other users' pending events of
// an all-users endpoint whose user no longer holds one.

/** The webhook endpoints, and what was attempted for them (the routes and the CLI). */
export interface WebhookStore {
  /** Stores the endpoint unless its user already has `maxPerUser` of them (then 'limit'), atomically. */
  createWebhook(endpoint: NewWebhookEndpoint, maxPerUser: number): Promise<WebhookEndpoint | 'limit'>;
  /** Endpoints in creation order: of `user`, or every user's when null. Never their secrets. */
  listWebhooks(user: string | null): Promise<WebhookEndpoint[]>;
  /**
   * Removes the endpoint (of `user`, or anyone's when null) with its queued events and its attempts:
   * no attempt starts after this resolves. False when there is none.
   */
  deleteWebhook(id: string, user: string | null): Promise<boolean>;
  /**
   * The endpoint's latest attempts, newest first; null when it does not exist (or is not `user`'s, when
   * given). `user` is a caller that is not admin: of an all-users endpoint it sees its own plants' only.
   */
  listDeliveryAttempts(endpointId: string, user: string | null, limit: number): Promise<DeliveryAttempt[] | null>;
  /**
   * Changes the endpoint (of `user`, or anyone's when null) and returns it; null when there is none.
   * Claims made after this resolves use the new URL. Disabling fails its pending events, as a 410 does
   * (an attempt under way finishes).
   */
  updateWebhook(id: string, user: string | null, change: WebhookChange): Promise<WebhookEndpoint | null>;
  /**
   * Replaces the endpoint's secret with `secret`, atomically for claims: one made after this resolves
   * signs with the new secret, and with the one replaced while `overlapMs` (0: none) has not passed. The
   * secret replaced before that is forgotten. Null when there is no such endpoint.
   */
  rotateWebhookSecret(id: string, user: string | null, secret: string, overlapMs: number): Promise<{ previousSecretExpiresAt: Date } | null>;
  /**
   * Queues one event of the endpoint again, with its event id, through the outbox: a delivered or failed
   * one becomes pending, due now, its retry schedule started over; a pending one is made due now (one
   * claimed now loses its claim and is attempted again). Only an event the endpoint may still receive (see
   * all-users.ts), and, for a `user` that is not admin, of its own plants.
   */
  resendWebhookEvent(id: string, user: string | null, eventId: string, maxQueued?: number): Promise<WebhookOperationResult<'queued' | 'no-event'>>;
  /**
   * Queues again, as resendWebhookEvent does, every failed event of the endpoint created at or after `since`; resolves with how many.
   * Past `maxQueued`, none of them (a recovery is whole or refused).
   */
  recoverWebhookEvents(id: string, user: string | null, since: Date, maxQueued?: number): Promise<WebhookOperationResult<number>>;
  /** Queues a test event (TEST_EVENT_BODY, flagged as a test) for this endpoint only; resolves with its event id. */
  queueTestEvent(id: string, user: string | null, maxQueued?: number): Promise<WebhookOperationResult<string>>;
}

/*
 * `maxQueued` of the three operations above (WEBHOOK_MAX_QUEUED_PER_USER; undefined: no bound, the CLI's):
 * how many events queued by these operations may be pending at once for the endpoint's user, on all of its
 * endpoints. An operation that would pass it queues nothing and answers QueueFull; a resend of an event
 * still pending queues nothing new and is never refused. An operation's events count until delivered or
 * failed for good, whether it was bounded or not. Operations of one user are serialised for the check
 * (SQLite: one writer; PostgreSQL: a per-user lock), so concurrent ones do not pass the bound together.
 */

/** Nothing was queued: the endpoint's user has `pending` events queued by operations, and `adding` more would pass `max`. */
export interface QueueFull {
  readonly refused: 'queue-full';
  readonly pending: number;
  readonly adding: number;
  readonly max: number;
}

/**
 * What an operation on one endpoint's events answers: its own result, or why nothing was queued (no
 * such endpoint for the caller, the endpoint is disabled: a disabled endpoint gets nothing, or the bound).
 */
export type WebhookOperationResult<T> = T | { readonly refused: 'no-endpoint' | 'disabled' } | QueueFull;

/** The queued webhook events, as the dispatcher works them off. */
export interface OutboxStore {
  /**
   * `listener` is called after a commit that queued at least one event (in this process), so that the
   * dispatcher need not wait for its next poll. One listener per store; a later call replaces it.
   */
  onEventsQueued(listener: () => void): void;
  /**
   * Claims due events (pending, next attempt due, no live claim), oldest due first, for one attempt each:
   * the attempt count goes up and the event is not due again until the lease ends. On PostgreSQL, every
   * instance claims with FOR UPDATE SKIP LOCKED, so an event is claimed by one instance at a time.
   */
  claimDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]>;
  /** Records attempts made under this instance's claims, in one transaction (see AttemptResult). */
  recordAttempts(instance: string, results: readonly AttemptResult[]): Promise<void>;
  /** Gives claims back unattempted (shutdown): due now, attempt count as before the claim. */
  releaseDeliveries(instance: string, deliveries: readonly ClaimedDelivery[]): Promise<void>;
  /**
   * Removes delivered and failed events, and attempts, older than `before`; returns the events removed.
   * Also erases the previous secrets whose overlap has ended (rotateWebhookSecret).
   */
  sweepWebhooks(before: Date): Promise<number>;
  /**
   * The events waiting for delivery (pending, every endpoint), for metrics: one bounded read that looks
   * at no more than `cap` of them (see WebhookBacklog).
   */
  webhookBacklog(cap: number): Promise<WebhookBacklog>;
}

/**
 * The live feed's log (GET /plants/events, src/feed/): every plant created or deleted, written in the
 * transaction that created or deleted it (a create's replay or conflict writes none, nor does an import).
 * A reader sees an event only once it is final: durable (SQLite: synced, as a create's answer waits for),
 * and with no event still to commit before it in the log's order (PostgreSQL: see its migration 011).
 */
export interface FeedStore {
  /** Where the kept log starts (what the retention removed ends there) and where its final events end now. */
  feedBounds(): Promise<FeedBounds>;
  /**
   * Final events after `after`, in the log's order, at most `limit`; of `owner` only when it is not null;
   * none past `until` when given.
   */
  readFeed(after: FeedPosition, limit: number, owner: string | null, until?: FeedPosition): Promise<FeedRead>;
  /**
   * Remembers where the log ends now, and removes the events up to the newest such mark made before
   * `before` (so a resume within the retention finds every event since); returns how many it removed.
   */
  sweepFeed(before: Date): Promise<number>;
  /**
   * `listener` is called when events may have become final: after this handle's commits that wrote some,
   * and (PostgreSQL) when another instance announced a commit. `tx` is that commit's transaction (0 on
   * SQLite): the reader looks again until `FeedRead.settledBefore` has passed it. One listener per store.
   */
  onFeedChanged(listener: (tx: bigint) => void): void;
}

export interface FeedBounds {
  readonly pruned: FeedPosition;
  readonly head: FeedPosition;
}

export interface FeedRead {
  readonly events: readonly FeedEvent[];
  /** Every transaction before this one was final when the events were read (SQLite: 1, since it has none). */
  readonly settledBefore: bigint;
}

export interface HealthStore {
  /** Resolves when the store can serve requests. */
  ping(): Promise<void>;
}

/**
 * The one door to persistent state, as facets: a caller uses the facet it needs (`store.plants`,
 * `store.tokens`, …), and a wrapper (wrappers/) replaces only the facets it changes. Method names are
 * unique across facets: the timing wrapper labels each operation by its method's name. Every backend
 * gives the same answers; the shared test suite runs against each. A resolved `createPlant` means the
 * plant is durably committed.
 */
export interface Store {
  readonly backend: string;
  readonly plants: PlantStore;
  readonly tokens: TokenStore;
  readonly counters: CounterStore;
  readonly secrets: SecretStore;
  readonly webhooks: WebhookStore;
  readonly outbox: OutboxStore;
  readonly feed: FeedStore;
  readonly health: HealthStore;
  close(): Promise<void>;
}

/** The name of a facet of the Store. */
export type Facet = Exclude<keyof Store, 'backend' | 'close'>;

/** The facets, in the order the wrappers go through them. Exhaustive by construction: a facet not listed fails to compile. */
const FACET_SET: Record<Facet, true> = {
  plants: true, tokens: true, counters: true, secrets: true, webhooks: true, outbox: true, feed: true, health: true,
};
export const FACETS = Object.keys(FACET_SET) as readonly Facet[];

/**
 * The facet methods that answer at once rather than with a promise; every other one is an operation a
 * caller waits on (the wrappers time it, and refuse it before the store is open). Checked below: a
 * method added to a facet that returns no promise fails to compile until it is named here and the
 * wrappers say what to do with it.
 */
export type ImmediateMethod = 'cachedPage' | 'onEventsQueued' | 'onFeedChanged';
type NotPromised = {
  [F in Facet]: { [M in keyof Store[F]]: Store[F][M] extends (...args: never[]) => Promise<unknown> ? never : M }[keyof Store[F]];
}[Facet];
type ImmediateMethodsListed = [NotPromised] extends [ImmediateMethod] ? true : never;
const immediateMethodsListed: ImmediateMethodsListed = true;

/**
 * A plants facet that can say at once, without I/O, whether reads may be served now (SQLite's): what the
 * list cache (wrappers/list-cache.ts) needs of it, so that a cached page is never served by a store that
 * would refuse the read. Keyed by a symbol: a capability for the wrapper made on the facet, not an
 * operation, so that the wrappers going through every operation of a facet never meet it.
 */
export const assertReadable: unique symbol = Symbol('assertReadable');

export interface CacheablePlants extends PlantStore {
  /** Throws StoreUnavailableError when reads are refused now (the file is lost, the store closed). */
  [assertReadable](): void;
}

/** A store whose lists this process may cache: its plants facet says whether reads are refused now. */
export interface CacheableStore extends Store {
  readonly plants: CacheablePlants;
}

/**
 * A store that is opened after the app is built (the start-up gate's, wrappers/late.ts): what the
 * readiness gate (http/plugins/readiness.ts) asks of it.
 */
export interface OpeningStore {
  /** The store the app uses; its operations reject with StoreNotOpenError until it is open. */
  readonly handle: Store;
  readonly isOpen: boolean;
}

/**
 * Pending webhook events. Past `cap` the count stops (`capped`, `pending` = cap) and `oldest` is the
 * oldest among those counted, so the true backlog is at least that large and at least that old.
 */
export interface WebhookBacklog {
  readonly pending: number;
  readonly capped: boolean;
  /** When the oldest pending event was queued; null when none is pending. */
  readonly oldest: Date | null;
}

/** The list cache's counters since it was made (store/wrappers/list-cache.ts), and what it holds now. */
export interface ListCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly entries: number;
  /** Plants held, an empty page counting one (the LIST_CACHE_PLANTS bound). */
  readonly plants: number;
  /** Estimated bytes held (store/wrappers/page-cache.ts), and the bound on them. */
  readonly bytes: number;
  readonly maxBytes: number;
}

/** A PostgreSQL store's connection pool now. */
export interface PoolStats {
  readonly total: number;
  readonly idle: number;
  /** Callers waiting for a connection. */
  readonly waiting: number;
  readonly max: number;
}

/**
 * Who watches a store from outside (the metrics, src/metrics/), given when it is opened. A store without
 * one does no work for it: each call below is made only when an observer was given.
 */
export interface StoreObserver {
  /** A group commit ended, committing `writes` writes in one transaction (SQLite: any writes; PostgreSQL: creates). */
  committed(backend: string, writes: number): void;
  /** Called once, when the list cache is made: `read` gives its counters, at scrape time. */
  listCache(read: () => ListCacheStats): void;
  /** Called once, when the pool is made: `read` gives its state, at scrape time. */
  pool(read: () => PoolStats): void;
}

/**
 * The store cannot be reached right now (connection refused or lost, timeout, lock held too long, disk
 * full). Requests fail with 503 and succeed again once it is back; nothing about the request was wrong.
 */
export class StoreUnavailableError extends Error {
  override readonly cause: unknown;

  constructor(cause: unknown) {
    super(`store unavailable: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.cause = cause;
  }
}

/** The store is not open yet (the server is starting): requests are answered 503 until it is. */
export class StoreNotOpenError extends StoreUnavailableError {
  constructor() {
    super('the store is not open yet');
  }
}

/** Opening a store that must exist found none there (a PostgreSQL database no migration was applied to). */
export class NoStoreError extends Error {
  constructor() {
    super('the database holds no plantstore store (no migration was ever applied to it)');
  }
}
