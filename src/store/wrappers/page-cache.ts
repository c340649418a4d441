import type { ListQuery, PlantPage } from '../store.js';

/**
 * An owner with pages in the cache: when it last changed its plants (a delete), when it last added one
 * (a create), how many of its pages are cached, and per tag its pages filtered by: their tag's own.
 */
interface Owner {
  readonly name: string;
  lastWrite: number;
  lastAppend: number;
  pages: number;
  readonly tags: Map<string, OwnerTag>;
}

/**
 * An owner's cached pages filtered by one tag: when the owner last created a plant with that tag (or,
 * from before this record was made, any plant: see `set`). Only such a create can change those pages;
 * a create with another tag or none leaves them exact.
 */
interface OwnerTag {
  readonly tag: string;
  lastAppend: number;
  pages: number;
}

interface Entry {
  readonly key: string;
  /** Null for an admin page, which every write makes stale. */
  readonly owner: Owner | null;
  /** For an owner's page filtered by a tag: that tag's record. */
  readonly ownerTag: OwnerTag | null;
  /** When the page was read; it stays valid while no write to its plants happened after. */
  readonly readAt: number;
  readonly page: PlantPage;
  /** What it counts against the plants bound: its plants, and at least one (an empty page is not free). */
  readonly slots: number;
  /** Estimated bytes it keeps alive (see `estimate`). */
  readonly bytes: number;
  /**
   * Neighbours in recency order. A list, not the Map's insertion order: taking the oldest from the
   * front of a churning Map walks over the holes its deletions leave, which made a long run of
   * cache-missing lists several times slower.
   */
  older: Entry | null;
  newer: Entry | null;
}

/**
 * Estimated V8 heap, in bytes, an entry keeps alive besides its strings and plants: its Map slot, the
 * Entry, the page (list-cache.ts's CachedPage), the plants array and the header of the page's JSON
 * text. Measured on Node 20 (x64) with pages read from SQLite: 270 bytes for an empty page, 320 with
 * its JSON text.
 */
const ENTRY_BYTES = 320;
/** A page with a next position: what a reader may keep with it (PlantPage: one short text, a sealed cursor of 22 characters). */
const NEXT_BYTES = 160;
/** Per plant: the object, its array slot, two string headers, its share of the JSON text's syntax. */
const PLANT_BYTES = 96;
/** Per owner with cached pages: its Owner record, its tags' Map and its Map slot. */
const OWNER_BYTES = 192;
/** Per tag an owner has cached pages filtered by: the record and its Map slot (its text counted apart). */
const OWNER_TAG_BYTES = 96;
/**
 * The byte budget per plant of LIST_CACHE_PLANTS (25.6 MB at the default 100000). A plant whose name
 * and tag hold 40 characters together is estimated at 96 + 4 × 40 = 256 bytes (more than it was
 * seen to take with its JSON text), so up to there the plant bound comes first; longer plants, or many small or empty pages,
 * reach the byte bound first.
 */
const CACHE_BYTES_PER_PLANT = 256;

/**
 * Strings are counted at 2 bytes a character (V8's two-byte strings; one-byte strings take half), and
 * twice: once as the plant's strings, once in the page's JSON text, kept with the page once made. (A control character escaped as \u00XX takes 6 bytes of JSON text: rare, and the bound then
 * holds within a factor of 2.)
 */
function estimate(key: string, page: PlantPage): number {
  let bytes = ENTRY_BYTES + 2 * key.length + (page.next === null ? 0 : NEXT_BYTES);
  // A page that carries its JSON text and its size (SQLite's) keeps no plant objects: its text is all.
  if (page.json !== undefined && page.size !== undefined) return bytes + 2 * page.json.length;
  for (const plant of page.plants) bytes += PLANT_BYTES + 4 * (plant.name.length + (plant.tag?.length ?? 0));
  return bytes;
}

/** What a page counts against the plants bound: its plants, and at least one (an empty page is not free). */
const slotsOf = (page: PlantPage): number => Math.max(1, page.size ?? page.plants.length);

/**
 * Pages of plant lists kept in memory, so reading the same page again costs no query. Never stale:
 * a page is served only if no plant of its owner (for an admin page: of anyone) was written after
 * the page was read, creates excepted for a page with a next position (see `appended`). Its one user,
 * list-cache.ts, reports every write with `wrote()` or `appended()` after it ended,
 * and gives `set` the `stamp()` taken before the read; so it must be the only writer of plants
 * (store/open.ts caches only where it is: a SQLite server, which holds the server lock).
 *
 * Bounded by what it really holds, whatever clients ask for: at most `maxPlants` plants, where every
 * entry counts at least one (so at most `maxPlants` entries, empty pages included), and at most
 * `maxPlants` × CACHE_BYTES_PER_PLANT estimated bytes (keys, plants, their JSON text, per-entry and
 * per-owner overhead). Least recently used out first. Write times are kept only for owners that have
 * cached pages, so that map is bounded by the entries too. A stale page stays until it is read or
 * evicted, counted like any other.
 */
export class PageCache {
  readonly #maxPlants: number;
  readonly #maxBytes: number;
  readonly #pages = new Map<string, Entry>();
  #oldest: Entry | null = null;
  #newest: Entry | null = null;
  readonly #owners = new Map<string, Owner>();
  /** The last write (delete) and the last append (create) by anyone, for admin pages. */
  #lastWrite = 0;
  #lastAppend = 0;
  #clock = 0;
  #slots = 0;
  #bytes = 0;
  /** Writes begun and not yet ended, per owner and in all (see `begin`). */
  readonly #writing = new Map<string, number>();
  #writingAll = 0;
  /** Lookups since the cache was made, for metrics: plain numbers, read only at scrape time. */
  #hits = 0;
  #misses = 0;

  constructor(maxPlants: number) {
    this.#maxPlants = maxPlants;
    this.#maxBytes = maxPlants * CACHE_BYTES_PER_PLANT;
  }

  get enabled(): boolean {
    return this.#maxPlants > 0;
  }

  /** What the cache holds now, against its bounds, and its lookups so far (for tests, diagnostics and metrics). */
  get usage(): {
    entries: number; slots: number; bytes: number; owners: number; maxPlants: number; maxBytes: number; hits: number; misses: number;
  } {
    return {
      entries: this.#pages.size, slots: this.#slots, bytes: this.#bytes, owners: this.#owners.size,
      maxPlants: this.#maxPlants, maxBytes: this.#maxBytes, hits: this.#hits, misses: this.#misses,
    };
  }

  /** A point in the cache's order of reads and writes: take it before a read, give it to `set`. */
  stamp(): number {
    return ++this.#clock;
  }

  /**
   * Owner names hold no control characters and tags no U+0000, so U+0000 separates fields; an admin
   * page has the empty owner (no user is named ""), and a filter on "" differs from no filter.
   */
  key({ owner, tag, after = 0, limit }: ListQuery): string {
    return `${owner ?? ''}\u0000${limit}\u0000${after}${tag === undefined ? '' : `\u0000${tag}`}`;
  }

  /**
   * The page kept for `key`, when it is still valid. `countMiss` false: a miss is not counted, because
   * the caller looks again before reading (list-cache.ts's cachedPage, then listPlants), and that look
   * counts it; a hit is counted by whichever look finds it.
   */
  get(key: string, countMiss = true): PlantPage | undefined {
    const entry = this.#pages.get(key);
    if (entry === undefined) {
      if (countMiss) this.#misses++;
      return undefined;
    }
    // A write of its owner's (for an admin page: anyone's) is under way: it may already be committed and
    // visible to reads. Not served, but kept: the write's end decides whether it is still valid.
    if (this.#writingAll > 0 && (entry.owner === null || this.#writing.has(entry.owner.name))) {
      if (countMiss) this.#misses++;
      return undefined;
    }
    const lastAppend = entry.ownerTag?.lastAppend ?? entry.owner?.lastAppend ?? this.#lastAppend;
    if (this.#stale(entry.page, entry.readAt, entry.owner?.lastWrite ?? this.#lastWrite, lastAppend)) {
      if (countMiss) this.#misses++;
      this.#remove(entry);
      return undefined;
    }
    this.#hits++;
    if (entry !== this.#newest) {
      this.#unlink(entry);
      this.#link(entry);
    }
    return entry.page;
  }

  /**
   * Keeps `page`, read for `query` after `readAt` (a `stamp()`; by default now, for a read made in this
   * turn of the event loop): it is served until a write recorded after that point.
   */
  set(query: ListQuery, key: string, page: PlantPage, readAt = this.stamp()): void {
    // Written since the read: not kept. An owner without cached pages has no write times kept, so the
    // last write by anyone stands in for it.
    const known = query.owner === null ? undefined : this.#owners.get(query.owner);
    const knownTag = query.tag === undefined ? undefined : known?.tags.get(query.tag);
    const lastWrite = known?.lastWrite ?? this.#lastWrite;
    const lastAppend = knownTag?.lastAppend ?? known?.lastAppend ?? this.#lastAppend;
    if (this.#stale(page, readAt, lastWrite, lastAppend)) return;
    const slots = slotsOf(page);
    const bytes = estimate(key, page);
    if (slots > this.#maxPlants || bytes + OWNER_BYTES > this.#maxBytes) return;
    const old = this.#pages.get(key);
    if (old) this.#remove(old);
    let owner: Owner | null = null;
    let ownerTag: OwnerTag | null = null;
    if (query.owner !== null) {
      owner = this.#owners.get(query.owner) ?? null;
      if (owner === null) {
        // Its writes before now were not recorded for it: anyone's last write and append stand in.
        owner = { name: query.owner, lastWrite: this.#lastWrite, lastAppend: this.#lastAppend, pages: 0, tags: new Map() };
        this.#owners.set(query.owner, owner);
        this.#bytes += OWNER_BYTES;
      }
      owner.pages++;
      if (query.tag !== undefined) {
        ownerTag = owner.tags.get(query.tag) ?? null;
        if (ownerTag === null) {
          // Its creates of this tag before now were not recorded apart: the owner's last create of any
          // plant stands in.
          ownerTag = { tag: query.tag, lastAppend: owner.lastAppend, pages: 0 };
          owner.tags.set(query.tag, ownerTag);
          this.#bytes += OWNER_TAG_BYTES + 2 * query.tag.length;
        }
        ownerTag.pages++;
      }
    }
    const entry: Entry = { key, owner, ownerTag, readAt, page, slots, bytes, older: null, newer: null };
    this.#pages.set(key, entry);
    this.#link(entry);
    this.#slots += slots;
    this.#bytes += bytes;
    while (this.#oldest !== null && (this.#slots > this.#maxPlants || this.#bytes > this.#maxBytes)) this.#remove(this.#oldest);
  }

  /**
   * A write to `owner`'s plants begins; `end` when it has ended, after `wrote` or `appended`. Meanwhile
   * none of their pages (and no admin page) is served: the store makes a write visible to reads at its
   * commit, before its caller is answered (SQLite's write queue syncs the WAL in between), so a page read
   * before the commit must not be served after it, when a read of another page could show the write.
   */
  begin(owner: string): void {
    this.#writing.set(owner, (this.#writing.get(owner) ?? 0) + 1);
    this.#writingAll++;
  }

  end(owner: string): void {
    const left = (this.#writing.get(owner) ?? 0) - 1;
    if (left > 0) this.#writing.set(owner, left);
    else this.#writing.delete(owner);
    this.#writingAll = Math.max(0, this.#writingAll - 1);
  }

  /** A write to `owner`'s plants (a delete) was committed (or may have been): every page of theirs is stale. */
  wrote(owner: string): void {
    this.#lastWrite = this.#lastAppend = ++this.#clock;
    // An owner without cached pages has nothing to make stale: nothing to remember.
    const cached = this.#owners.get(owner);
    if (cached) cached.lastWrite = cached.lastAppend = this.#lastWrite;
  }

  /**
   * A plant of `owner`'s, tagged `tag` (undefined: none), was created (or may have been). A new plant
   * comes after every plant there is (its position, seq, only grows and is never reused), so it can only
   * change a page that reaches the end of its list: one without a next position, which would now gain
   * the plant or a next link. A page with a next position holds the plants between two positions that
   * were both there before, and stays exact: the first pages of a long list survive the creates that keep
   * it growing. And only a list the plant belongs to: the owner's pages without a tag filter, and those
   * filtered by its tag; a page filtered by another tag stays exact too.
   */
  appended(owner: string, tag: string | undefined): void {
    this.#lastAppend = ++this.#clock;
    const cached = this.#owners.get(owner);
    if (cached === undefined) return;
    cached.lastAppend = this.#lastAppend;
    const cachedTag = tag === undefined ? undefined : cached.tags.get(tag);
    if (cachedTag !== undefined) cachedTag.lastAppend = this.#lastAppend;
  }

  /** Whether a page read at `readAt` may have changed since, given its owner's (or anyone's) last write and append. */
  #stale(page: PlantPage, readAt: number, lastWrite: number, lastAppend: number): boolean {
    return lastWrite >= readAt || (page.next === null && lastAppend >= readAt);
  }

  clear(): void {
    this.#pages.clear();
    this.#owners.clear();
    this.#oldest = this.#newest = null;
    this.#slots = 0;
    this.#bytes = 0;
    this.#lastWrite = this.#lastAppend = ++this.#clock;
  }

  #remove(entry: Entry): void {
    this.#pages.delete(entry.key);
    this.#unlink(entry);
    this.#slots -= entry.slots;
    this.#bytes -= entry.bytes;
    const { owner, ownerTag } = entry;
    if (owner !== null && ownerTag !== null && --ownerTag.pages === 0) {
      owner.tags.delete(ownerTag.tag);
      this.#bytes -= OWNER_TAG_BYTES + 2 * ownerTag.tag.length;
    }
    if (owner !== null && --owner.pages === 0) {
      this.#owners.delete(owner.name);
      this.#bytes -= OWNER_BYTES;
    }
  }

  /** Makes `entry` the most recently used. */
  #link(entry: Entry): void {
    entry.older = this.#newest;
    entry.newer = null;
    if (this.#newest) this.#newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
  }

  #unlink(entry: Entry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.#oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.#newest = entry.older;
    entry.older = entry.newer = null;
  }
}
