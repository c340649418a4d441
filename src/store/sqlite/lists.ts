import { PLANT_JSON } from '../../domain/plant.js';
import type Database from './driver.js';
import { JsonPage, LIST_SHAPES, listFilter, listRange, listShape, type ListShape } from '../sql/lists.js';
import { raw, render, sql, SQLITE, type Dialect } from '../sql/dialect.js';
import { wireJsonSql } from '../sql/wire.js';
import type { ListQuery, PlantPage } from '../store.js';

/** A plant as the list route's schema serializes it (PLANT_JSON, made in SQL: sql/wire.ts). */
const PLANT_JSON_SQL = wireJsonSql(SQLITE, PLANT_JSON, (column) => column);

/**
 * `+?` rather than `?`: SQLite plans `LIMIT ?` for the value bound, and with ANALYZE's sqlite_stat4
 * samples (`ANALYZE` or `PRAGMA optimize` on the store) also `owner = ?`, `tag = ?` and `seq > ?`:
 * binding a new value then makes the next step parse and plan the statement again (sqlite3Reprepare, a
 * large part of a list query, seen with perf). The unary plus is a no-op on the value and leaves the
 * plan as it is (EXPLAIN QUERY PLAN: the same index, the same range).
 */
const PLANNED_ONCE: Dialect = { ...SQLITE, placeholder: () => '+?' };

/**
 * One statement per shape gives the page as one JSON text, its size, the position of its last plant,
 * and whether a plant follows it (one index probe after that position, rather than reading limit + 1
 * plants): one string crosses into JavaScript instead of an object per plant, which better-sqlite3
 * builds property by property, and nothing is serialized again. group_concat's ORDER BY is what
 * guarantees the order (without it SQLite documents the order as arbitrary). The page's range is the
 * shared one (sql/lists.ts).
 */
export function pageText(shape: ListShape): string {
  return render(PLANNED_ONCE, sql`SELECT p.json, p.size, p.last, EXISTS (SELECT 1 FROM plants WHERE ${listFilter(shape)}seq > p.last) AS more
    FROM (SELECT group_concat(j, ',' ORDER BY seq) AS json, count(*) AS size, max(seq) AS last
          FROM (${listRange(shape, raw(`seq, ${PLANT_JSON_SQL} AS j`))})) AS p`).text;
}

type PageRow = [json: string | null, size: number, last: number | null, more: number];

/** The list statements of one connection, prepared once. */
export class PageReader {
  readonly #statements: Readonly<Record<ListShape, Database.Statement<unknown[], PageRow>>>;

  constructor(db: Database.Database) {
    const prepared = {} as Record<ListShape, Database.Statement<unknown[], PageRow>>;
    for (const shape of LIST_SHAPES) prepared[shape] = db.prepare<unknown[], PageRow>(pageText(shape)).raw(true);
    this.#statements = prepared;
  }

  read(query: ListQuery): PlantPage {
    const [shape, filter] = listShape(query);
    // The filter's values twice: once for the probe after the page, once for the page.
    const row = this.#statements[shape].get([...filter, ...filter, query.after ?? 0, query.limit]);
    if (row === undefined) throw new Error('the list statement returned no row');
    const [json, size, last, more] = row;
    return new JsonPage(`[${json ?? ''}]`, size, more === 1 ? last : null);
  }
}
