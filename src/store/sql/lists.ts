import type { Plant } from '../../domain/plant.js';
import type { ListQuery, PlantPage } from '../store.js';

/**
 * The list query both backends run, written once: its four shapes (each with its own index, see the
 * migrations), the range a page reads, and which shape and values a ListQuery takes. Each backend builds
 * its own statement around the range (SQLite's one-row page, PostgreSQL's batch of lists) and chooses
 * its placeholders.
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

/** How many values a shape's range takes: its filter's, the position, the limit. */
export function listValueCount(shape: ListShape): number {
  return FILTERS[shape].length + 2;
}

/** The shape's filter as conditions each followed by AND, its values from placeholder `from` on. */
export function listFilter(shape: ListShape, param: (i: number) => string, from = 1): string {
  return FILTERS[shape].map((column, i) => `${column} = ${param(from + i)} AND `).join('');
}

/**
 * `columns` of the plants of `shape` after a position, in seq order, at most a limit: one index range.
 * Its values, from placeholder `from` on: the filter's, the position, the limit.
 */
export function listRange(shape: ListShape, columns: string, param: (i: number) => string, from = 1): string {
  const n = FILTERS[shape].length;
  return `SELECT ${columns} FROM plants WHERE ${listFilter(shape, param, from)}seq > ${param(from + n)} ORDER BY seq LIMIT ${param(from + n + 1)}`;
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
