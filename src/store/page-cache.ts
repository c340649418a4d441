import type { ListQuery, PlantPage } from './store.js';

interface Entry {
  /** When the page was read; it stays valid while no write to its plants happened after. */
  readonly readAt: number;
  readonly page: PlantPage;
}

/**
 * Pages of plant lists kept in memory, so reading the same page again costs no query. Never stale:
 * a page is served only if no plant of its owner (for an admin page: of anyone) was written after
 * the page was read. The owning store reports every write with `wrote()`, so it must be the only
 * writer of plants (the SQLite server lock sees to that). Bounded by the number of plants held, least
 * recently used first out.
 */
export class PageCache {
  readonly #maxPlants: number;
  readonly #pages = new Map<string, Entry>();
  /** Owner → time of its last write. Trimmed by clearing everything, which is always safe. */
  readonly #writes = new Map<string, number>();
  #lastWrite = 0;
  #clock = 0;
  #plants = 0;

  constructor(maxPlants: number) {
    this.#maxPlants = maxPlants;
  }

  get enabled(): boolean {
    return this.#maxPlants > 0;
  }

  /**
   * Owner names hold no control characters and tags no U+0000, so U+0000 separates fields; an admin
   * page has the empty owner (no user is named ""), and a filter on "" differs from no filter.
   */
  key({ owner, tag, after = 0, limit }: ListQuery): string {
    return `${owner ?? ''}\u0000${limit}\u0000${after}${tag === undefined ? '' : `\u0000${tag}`}`;
  }

  get(query: ListQuery, key: string): PlantPage | undefined {
    const entry = this.#pages.get(key);
    if (entry === undefined) return undefined;
    const lastWrite = query.owner === null ? this.#lastWrite : (this.#writes.get(query.owner) ?? 0);
    this.#pages.delete(key);
    if (lastWrite >= entry.readAt) {
      this.#plants -= entry.page.plants.length;
      return undefined;
    }
    this.#pages.set(key, entry); // most recently used last
    return entry.page;
  }

  set(key: string, page: PlantPage): void {
    if (page.plants.length > this.#maxPlants) return;
    const old = this.#pages.get(key);
    if (old) this.#plants -= old.page.plants.length;
    this.#pages.set(key, { readAt: ++this.#clock, page });
    this.#plants += page.plants.length;
    for (const [oldest, entry] of this.#pages) {
      if (this.#plants <= this.#maxPlants) break;
      this.#pages.delete(oldest);
      this.#plants -= entry.page.plants.length;
    }
  }

  /** A write to `owner`'s plants was committed (or may have been). */
  wrote(owner: string): void {
    if (this.#writes.size >= this.#maxPlants) this.clear();
    this.#lastWrite = ++this.#clock;
    this.#writes.set(owner, this.#lastWrite);
  }

  clear(): void {
    this.#pages.clear();
    this.#writes.clear();
    this.#plants = 0;
    this.#lastWrite = ++this.#clock;
  }
}
