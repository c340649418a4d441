import { plantsJson, type NewPlant, type Plant } from '../../domain/plant.js';
import { PageCache } from './page-cache.js';
import {
  assertReadable,
  type CacheablePlants, type CacheableStore, type CreateOutcome, type ListQuery, type PlantPage, type PlantStore, type Store,
  type StoreObserver,
} from '../store.js';
import { withFacets } from './facets.js';

/**
 * A page the cache keeps, with its JSON text made on first need and kept with it: a cached list is then
 * sent without serializing again. plantsJson writes the text the route's response schema would
 * (domain/plant.ts); the shared list tests compare both paths.
 */
class CachedPage implements PlantPage {
  readonly plants: readonly Plant[];
  readonly next: number | null;
  #json: string | undefined;

  constructor({ plants, next }: PlantPage) {
    this.plants = plants;
    this.next = next;
  }

  get json(): string {
    return (this.#json ??= plantsJson(this.plants));
  }
}

/**
 * The list cache as a plants facet: lists are served from a PageCache that this wrapper alone fills and
 * invalidates, everything else goes to `inner`. Correct only where this handle is the only writer of
 * plants (store/open.ts decides: a SQLite server, which holds the one-server lock). It needs nothing else
 * of the backend but its check that reads may be served now: a page is stamped before the read starts,
 * and a write is recorded after its commit (or failure), so a page read before a write, whenever it is
 * cached, is never served after that write; while the write is under way (it may be committed and
 * visible to reads before it is answered), its owner's pages are not served at all.
 */
class ListCachingPlants implements PlantStore {
  readonly #inner: CacheablePlants;
  readonly #cache: PageCache;

  constructor(inner: CacheablePlants, cache: PageCache) {
    this.#inner = inner;
    this.#cache = cache;
  }

  cachedPage(query: ListQuery): PlantPage | undefined {
    // Refused by the store (its file lost, or closed): refused here too, cached or not.
    this.#inner[assertReadable]();
    return this.#cache.get(this.#cache.key(query), false);
  }

  async listPlants(query: ListQuery): Promise<PlantPage> {
    this.#inner[assertReadable]();
    const key = this.#cache.key(query);
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const readAt = this.#cache.stamp();
    const read = await this.#inner.listPlants(query);
    // A page that carries its JSON text (SQLite's) is kept as it is.
    const page = read.json === undefined ? new CachedPage(read) : read;
    this.#cache.set(query, key, page, readAt);
    return page;
  }

  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    this.#cache.begin(owner);
    return this.#inner.createPlant(owner, plant).finally(() => {
      this.#cache.appended(owner, plant.tag);
      this.#cache.end(owner);
    });
  }

  deletePlant(owner: string, id: bigint): Promise<boolean> {
    this.#cache.begin(owner);
    return this.#inner.deletePlant(owner, id).finally(() => {
      this.#cache.wrote(owner);
      this.#cache.end(owner);
    });
  }
}

/**
 * `store` with its lists cached, at most `maxPlants` plants (and their bytes: see PageCache); 0 is no cache.
 * Only the plants facet is replaced; the rest of the store is its own. An `observer` reads the cache's
 * counters at scrape time.
 */
export function cacheLists(store: CacheableStore, maxPlants: number, observer?: StoreObserver): Store {
  if (maxPlants <= 0) return store;
  const cache = new PageCache(maxPlants);
  observer?.listCache(() => {
    const { hits, misses, entries, slots, bytes, maxBytes } = cache.usage;
    return { hits, misses, entries, plants: slots, bytes, maxBytes };
  });
  return withFacets(store, { plants: new ListCachingPlants(store.plants, cache) }, () => {
    cache.clear();
    return store.close();
  });
}
