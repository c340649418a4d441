/**
 * The live feed's positions (GET /plants/events, docs/feed.md). An event's place in the log is `(tx, pos)`,
 * compared as a pair: on PostgreSQL `tx` is the writing transaction's id and `pos` an identity value (see
 * its migration 011); on SQLite, whose one writer commits in `pos` order, `tx` is always 0. The text form,
 * an event's SSE `id`, is `pos` alone when `tx` is 0, else `tx-pos`: clients hand it back as it is.
 */
export interface FeedPosition {
  readonly tx: bigint;
  readonly pos: bigint;
}

/** The position before every event: where an empty log ends. */
export const FEED_START: FeedPosition = { tx: 0n, pos: 0n };

/** What an event id may look like (the route's `since` and Last-Event-ID are checked against it). */
export const FEED_ID_PATTERN = '^[0-9]{1,20}(-[0-9]{1,20})?$';
const FEED_ID = new RegExp(FEED_ID_PATTERN);
const INT64_MAX = (1n << 63n) - 1n;
/** xid8 is unsigned 64-bit. */
const UINT64_MAX = (1n << 64n) - 1n;

export function feedId(p: FeedPosition): string {
  return p.tx === 0n ? p.pos.toString() : `${p.tx}-${p.pos}`;
}

/** The position an event id names; undefined when the text is not one. */
export function parseFeedId(text: string): FeedPosition | undefined {
  if (!FEED_ID.test(text)) return undefined;
  const dash = text.indexOf('-');
  const tx = dash < 0 ? 0n : BigInt(text.slice(0, dash));
  const pos = BigInt(dash < 0 ? text : text.slice(dash + 1));
  return tx > UINT64_MAX || pos > INT64_MAX ? undefined : { tx, pos };
}

/** Negative, zero or positive as `a` comes before, at or after `b`. */
export function compareFeed(a: FeedPosition, b: FeedPosition): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1;
  return a.pos === b.pos ? 0 : a.pos < b.pos ? -1 : 1;
}

export function laterFeed(a: FeedPosition, b: FeedPosition): FeedPosition {
  return compareFeed(a, b) >= 0 ? a : b;
}

/** One event of the log: a plant created or deleted, `body` as the webhook body carries it. */
export interface FeedEvent {
  readonly at: FeedPosition;
  readonly owner: string;
  readonly deleted: boolean;
  readonly body: string;
}
