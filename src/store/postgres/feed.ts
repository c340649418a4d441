import type { FeedEvent, FeedPosition } from '../../domain/feed.js';
import type { FeedBounds, FeedRead, FeedStore } from '../store.js';
import type { EventsNotice } from './notify.js';
import type { Connections } from './pool.js';

/**
 * Every transaction older than the snapshot's xmin has ended: the events below it are final (migration
 * 011). Each read computes it once, in its own snapshot, and returns it.
 */
const XMIN = 'pg_snapshot_xmin(pg_current_snapshot())';

// The columns are renamed on the way out (t, not tx): ORDER BY would otherwise sort by the text.
const READ = (owner: boolean, until: boolean): string => `WITH s AS (SELECT ${XMIN} AS xmin)
  SELECT s.xmin::text AS xmin, e.t, e.pos, e.owner, e.deleted, e.body FROM s LEFT JOIN LATERAL (
    SELECT tx::text AS t, pos, owner, deleted, body FROM plant_events
    WHERE (tx, pos) > ($1::xid8, $2::bigint) AND tx < s.xmin
      ${owner ? 'AND owner = $4' : 'AND $4::text IS NULL'}
      ${until ? 'AND (tx, pos) <= ($5::xid8, $6::bigint)' : ''}
    ORDER BY tx, pos LIMIT $3) e ON true`;

const BOUNDS = `SELECT p.tx::text AS pruned_tx, p.pos AS pruned_pos, h.tx::text AS head_tx, h.pos AS head_pos
  FROM feed_pruned p LEFT JOIN LATERAL (
    SELECT tx, pos FROM plant_events WHERE tx < ${XMIN} ORDER BY tx DESC, pos DESC LIMIT 1) h ON true`;

/**
 * The sweep, in one statement: a mark of the log's final end now; the newest mark older than the
 * retention is the cut; the events up to it go, feed_pruned moves to it, older marks go.
 */
const SWEEP = `WITH head AS (SELECT tx, pos FROM plant_events WHERE tx < ${XMIN} ORDER BY tx DESC, pos DESC LIMIT 1),
  mark AS (INSERT INTO feed_marks (tx, pos) SELECT tx, pos FROM head),
  cut AS (SELECT tx, pos FROM feed_marks WHERE at < $1 ORDER BY tx DESC, pos DESC LIMIT 1),
  gone AS (DELETE FROM plant_events e USING cut WHERE (e.tx, e.pos) <= (cut.tx, cut.pos) RETURNING 1),
  moved AS (UPDATE feed_pruned p SET tx = cut.tx, pos = cut.pos FROM cut WHERE (p.tx, p.pos) < (cut.tx, cut.pos)),
  marks AS (DELETE FROM feed_marks m USING cut WHERE (m.tx, m.pos) < (cut.tx, cut.pos))
  SELECT count(*)::int AS removed FROM gone`;

/**
 * Events of transactions this server has not started yet: a dump restored into another cluster, whose
 * transaction ids start lower. New events would sort before them, and a reader past them would never
 * see the new ones: the sweep removes them first (AHEAD_SWEEP), and puts feed_pruned back to the start,
 * so that a resume from them, now past the log's end, is refused (410) rather than read out of order.
 */
const AHEAD = 'SELECT EXISTS (SELECT 1 FROM plant_events WHERE tx >= pg_snapshot_xmax(pg_current_snapshot())) AS ahead';
const AHEAD_SWEEP = `WITH gone AS (DELETE FROM plant_events WHERE tx >= pg_snapshot_xmax(pg_current_snapshot()) RETURNING 1),
  marks AS (DELETE FROM feed_marks WHERE tx >= pg_snapshot_xmax(pg_current_snapshot())),
  moved AS (UPDATE feed_pruned SET tx = '0', pos = 0)
  SELECT count(*)::int AS removed FROM gone`;

interface EventRow {
  xmin: string;
  t: string | null;
  pos: string;
  owner: string;
  deleted: boolean;
  body: string;
}

/** Who is told that feed events may have become final: this handle's commits, and other instances' (notify.ts). */
export class FeedListener {
  #listener: ((tx: bigint) => void) | undefined;
  readonly #notice: EventsNotice;

  constructor(notice: EventsNotice) {
    this.#notice = notice;
  }

  set(listener: (tx: bigint) => void): void {
    this.#listener = listener;
    this.#notice.listenFeed(this.tell);
  }

  /** Its failure is not the create's: the feed polls too. */
  readonly tell = (tx: bigint): void => {
    try {
      this.#listener?.(tx);
    } catch {
      // See above.
    }
  };
}

function position(tx: string | null, pos: string | number | null): FeedPosition {
  return { tx: BigInt(tx ?? 0), pos: BigInt(pos ?? 0) };
}

/** The feed's log on PostgreSQL, read in (tx, pos) order up to the snapshot's xmin (migration 011). */
export class PostgresFeed implements FeedStore {
  readonly #connections: Connections;
  readonly #listener: FeedListener;

  constructor(connections: Connections, listener: FeedListener) {
    this.#connections = connections;
    this.#listener = listener;
  }

  onFeedChanged(listener: (tx: bigint) => void): void {
    this.#listener.set(listener);
  }

  async feedBounds(): Promise<FeedBounds> {
    const { rows } = await this.#connections.query<{ pruned_tx: string; pruned_pos: string; head_tx: string | null; head_pos: string | null }>(
      'feed_bounds', BOUNDS, [],
    );
    const row = rows[0];
    if (row === undefined) throw new Error('feed_pruned has no row');
    const pruned = position(row.pruned_tx, row.pruned_pos);
    const head = row.head_tx === null ? pruned : position(row.head_tx, row.head_pos);
    return { pruned, head };
  }

  async readFeed(after: FeedPosition, limit: number, owner: string | null, until?: FeedPosition): Promise<FeedRead> {
    const values: unknown[] = [after.tx.toString(), after.pos.toString(), limit, owner];
    if (until !== undefined) values.push(until.tx.toString(), until.pos.toString());
    const name = `feed_read_${owner === null ? 'all' : 'owner'}${until === undefined ? '' : '_until'}`;
    const { rows } = await this.#connections.query<EventRow>(name, READ(owner !== null, until !== undefined), values);
    const events: FeedEvent[] = [];
    for (const r of rows) {
      if (r.t !== null) events.push({ at: position(r.t, r.pos), owner: r.owner, deleted: r.deleted, body: r.body });
    }
    return { events, settledBefore: BigInt(rows[0]?.xmin ?? 0) };
  }

  async sweepFeed(before: Date): Promise<number> {
    const { rows: ahead } = await this.#connections.query<{ ahead: boolean }>('feed_ahead', AHEAD, []);
    const removed = ahead[0]?.ahead ? (await this.#connections.query<{ removed: number }>('feed_sweep_ahead', AHEAD_SWEEP, [])).rows[0]?.removed ?? 0 : 0;
    const { rows } = await this.#connections.query<{ removed: number }>('feed_sweep', SWEEP, [before]);
    return removed + (rows[0]?.removed ?? 0);
  }
}
