import { PLANT_JSON } from '../../domain/plant.js';
import { JsonPage, LIST_NAMES, listCall, listRange, type ListShape } from '../sql/lists.js';
import { join, POSTGRES, raw, render, sql } from '../sql/dialect.js';
import { wireJsonSql } from '../sql/wire.js';
import type { ListQuery, PlantPage } from '../store.js';
import type { Connections } from './pool.js';

/**
 * Group reads, as group commit does for creates: the lists asked for during one turn of the event loop
 * go to PostgreSQL as one statement per query shape, one round trip for all of them. On a small machine
 * a round trip, not the rows, is what a list costs: waking a PostgreSQL backend and this process again
 * for each one (see docs/performance.md). Each distinct list is still its own index range scan (see
 * listBatchText; identical ones share one, see #flush), read by a statement that starts after the
 * request arrived: never staler than a statement of its own.
 *
 * Each plant comes as its JSON text, made by PostgreSQL (PLANT_JSON, sql/wire.ts), as the list route's
 * schema serializes a Plant; json_build_object would not do (it writes `"name" : …`, with spaces). The
 * page is these texts joined: no row objects and no serialization in this process. Aggregating each
 * page into one text in SQL (string_agg … ORDER BY) was measured too and cost PostgreSQL much more than
 * the plain query, while a text per plant costs it little; PostgreSQL is what instances share.
 */
const PLANT_JSON_SQL = wireJsonSql(POSTGRES, PLANT_JSON, (column) => column);

/**
 * Lists per statement at most (each has its own limit, 1-1000, + 1 rows). Each batch size is its own
 * prepared statement, so a connection prepares at most this many per query shape.
 */
const MAX_LIST_BATCH = 32;

/**
 * `n` lists of one shape in one statement: the shape's range (sql/lists.ts) `n` times, each its own
 * branch of a UNION ALL with its own values (each list's in listCall's order, one list after the other),
 * numbered from 1 in the first column. Not one LATERAL join
 * over arrays of values: PostgreSQL plans such a subquery once for all values, without the owner's
 * frequency nor the limit, and picked the primary key's order with a filter on the owner (a walk over
 * every user's plants for a small user); each branch here is planned with its values, as the single
 * statement is.
 */
export function listBatchText(shape: ListShape, n: number): string {
  const branches = Array.from({ length: n }, (_, i) => {
    const list = raw(String(i + 1));
    return sql`(SELECT ${list}, seq, plant FROM (${listRange(shape, raw(`seq, ${PLANT_JSON_SQL}`), `_${i + 1}`)}) AS p${list}(seq, plant))`;
  });
  return render(POSTGRES, join(branches, ' UNION ALL ')).text;
}

/** A row of a batch (listBatchText), in array mode: which list (from 1), seq (bigint: text), the plant's JSON text. */
type ListBatchRow = [number, string, string];

interface PendingList {
  readonly query: ListQuery;
  resolve(page: PlantPage): void;
  reject(error: unknown): void;
}

/** One list to read in a batch, and every caller that asked for exactly it in the same turn (see #flush). */
interface BatchedList {
  readonly values: unknown[];
  readonly limit: number;
  readonly callers: PendingList[];
}

/** Whether seq `a` comes after seq `b`: both positive bigints as PostgreSQL writes them (no leading zeros). */
const after = (a: string, b: string): boolean => (a.length === b.length ? a > b : a.length > b.length);

/** The page of `limit` plants in `rows` (one list's rows, limit + 1 when more remain), in seq order. */
function pageOfRows(rows: ListBatchRow[], limit: number): PlantPage {
  // Each branch gives its rows in index order; a plan that did otherwise is put right here.
  for (let i = 1; i < rows.length; i++) {
    if (after((rows[i - 1] as ListBatchRow)[1], (rows[i] as ListBatchRow)[1])) {
      rows.sort((a, b) => (after(a[1], b[1]) ? 1 : -1));
      break;
    }
  }
  const count = Math.min(rows.length, limit);
  let json = '[';
  for (let i = 0; i < count; i++) json += i === 0 ? (rows[i] as ListBatchRow)[2] : `,${(rows[i] as ListBatchRow)[2]}`;
  return new JsonPage(`${json}]`, count, rows.length > limit ? Number((rows[limit - 1] as ListBatchRow)[1]) : null);
}

/** The lists of one store, read in groups (see above). */
export class ListReads {
  readonly #connections: Connections;
  readonly #inFlight: Set<Promise<void>>;
  #lists: PendingList[] = [];
  /** The batch statements made so far, by name: each is made once per store. */
  readonly #batches = new Map<string, { readonly name: string; readonly text: string }>();

  /** `inFlight` holds each batch until it is answered, so that closing the store waits for it. */
  constructor(connections: Connections, inFlight: Set<Promise<void>>) {
    this.#connections = connections;
    this.#inFlight = inFlight;
  }

  /** Joins the lists asked for in this turn of the event loop. */
  read(query: ListQuery): Promise<PlantPage> {
    return new Promise((resolve, reject) => {
      if (this.#lists.push({ query, resolve, reject }) === 1) setImmediate(this.#flush);
    });
  }

  /** Sends the lists asked for so far now (the store is closing). */
  flush(): void {
    if (this.#lists.length > 0) this.#flush();
  }

  /**
   * Identical lists asked for in the same turn (the same owner or admin, tag filter, position and limit)
   * are read once, by one branch, and every caller gets that page: it was read by a statement that
   * started after each of them arrived, so it is as fresh for all as a read of its own, and pages are
   * shared and read-only (see PlantPage). Many clients polling one page then cost one read per turn
   * rather than one each.
   */
  readonly #flush = (): void => {
    const lists = this.#lists;
    this.#lists = [];
    const byShape = new Map<ListShape, BatchedList[]>();
    const byKey = new Map<string, BatchedList>();
    for (const list of lists) {
      const [shape, values] = listCall(list.query);
      const key = shape + JSON.stringify(values);
      const same = byKey.get(key);
      if (same !== undefined) {
        same.callers.push(list);
        continue;
      }
      const batched: BatchedList = { values, limit: list.query.limit, callers: [list] };
      byKey.set(key, batched);
      const ofShape = byShape.get(shape);
      if (ofShape === undefined) byShape.set(shape, [batched]);
      else ofShape.push(batched);
    }
    for (const [shape, same] of byShape) {
      for (let i = 0; i < same.length; i += MAX_LIST_BATCH) this.#read(shape, same.slice(i, i + MAX_LIST_BATCH));
    }
  };

  #statement(shape: ListShape, n: number): { readonly name: string; readonly text: string } {
    const name = `${LIST_NAMES[shape]}_x${n}`;
    let statement = this.#batches.get(name);
    if (statement === undefined) this.#batches.set(name, (statement = { name, text: listBatchText(shape, n) }));
    return statement;
  }

  #read(shape: ListShape, batch: BatchedList[]): void {
    const values: unknown[] = [];
    for (const l of batch) values.push(...l.values);
    const { name, text } = this.#statement(shape, batch.length);
    const done = this.#connections.query<ListBatchRow>(name, text, values, 'array').then(
      (result) => {
        const rows = result.rows as unknown as ListBatchRow[];
        const each: ListBatchRow[][] = batch.map(() => []);
        for (const row of rows) each[row[0] - 1]?.push(row);
        batch.forEach((l, i) => {
          const page = pageOfRows(each[i] as ListBatchRow[], l.limit);
          for (const caller of l.callers) caller.resolve(page);
        });
      },
    ).catch((error: unknown) => batch.forEach((l) => l.callers.forEach((caller) => caller.reject(error)))); // a settled one ignores this
    this.#inFlight.add(done);
    void done.finally(() => this.#inFlight.delete(done));
  }
}
