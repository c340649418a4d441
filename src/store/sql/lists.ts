import type { Plant } from '../../domain/plant.js';
import { join, param, raw, sql, type Sql } from './dialect.js';
import type { ListQuery, PlantPage } from '../store.js';

/**
 * The list query both backends run, written once: its four shapes (each with its own index, see the
 * migrations), the range a page reads, and which shape and values a ListQuery takes. Each backend builds
 * its own statement around the range (SQLite's one-row page, PostgreSQL's batch of lists) and renders
 * it in its dialect (sql/dialect.ts).
 */

/** The four shapes of a list query, each with its own index (see the migrations). */
export type ListShape = 'all' | 'allTag' | 'owner' | 'ownerTag';

export const LIST_SHAPES: readonly ListShape[] = ['all', 'allTag', 'owner', 'ownerTag'];

/** The columns each shape filters on, in the order of their values (the position and the limit follow them). */
const FILTERS: Readonly<Record<ListShape, readonly string[]>> = {
  all: [],
  allTag: ['tag'],
  owner: ['owner'],
  ownerTag: ['owner', 'tag'],
};

/** PostgreSQL's prepared-statement name of each shape (a batch of n lists adds `_x<n>`). */
export const LIST_NAMES: Readonly<Record<ListShape, string>> = {
  all: 'list_all', allTag: 'list_all_tag', owner: 'list_owner', ownerTag: 'list_owner_tag',
};

/**
 * The shape's filter as conditions each followed by AND. Its values are named after their columns, and
 * `list` after that: a statement reading several lists names each list's values apart.
 */
export function listFilter(shape: ListShape, list = ''): Sql {
  return join(FILTERS[shape].map((column) => sql`${raw(column)} = ${param(`${column}${list}`)} AND `), '');
}

/**
 * `columns` of the plants of `shape` after a position, in seq order, at most a limit: one index range.
 * Its values, in this order (listCall's): the filter's, the position (`after`), the `limit`.
 */
export function listRange(shape: ListShape, columns: Sql, list = ''): Sql {
  return sql`SELECT ${columns} FROM plants WHERE ${listFilter(shape, list)}seq > ${param(`after${list}`)} ORDER BY seq LIMIT ${param(`limit${list}`)}`;
}

/** Which shape lists `query`, and its filter's values. */
export function listShape({ owner, tag }: ListQuery): [ListShape, unknown[]] {
  return owner === null
    ? tag === undefined ? ['all', []] : ['allTag', [tag]]
    : tag === undefined ? ['owner', [owner]] : ['ownerTag', [owner, tag]];
}

/**
 * Which statement lists `query`, and its values: the owner and tag when filtered, the position, and
 * one more plant than the page holds, which tells whether another page follows.
 */
export function listCall({ owner, tag, after = 0, limit }: ListQuery): [ListShape, unknown[]] {
  return owner === null
    ? tag === undefined ? ['all', [after, limit + 1]] : ['allTag', [tag, after, limit + 1]]
    : tag === undefined ? ['owner', [owner, after, limit + 1]] : ['ownerTag', [owner, tag, after, limit + 1]];
}

/**
 * A page as a store reads it: its plants as JSON text (domain/plant.ts plantsJson), made by the
 * database (sql/wire.ts), which the list route sends as it is. `plants` (for callers of the store
 * itself: tests, tools; nothing on the request path) is parsed from the text whenever asked and not kept,
 * so a cached page holds its text only, which is what the page cache counts.
 */
export class JsonPage implements PlantPage {
  constructor(
    readonly json: string,
    readonly size: number,
    readonly next: number | null,
  ) {}

  get plants(): readonly Plant[] {
    return JSON.parse(this.json) as Plant[];
  }
}
