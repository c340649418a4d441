import { FACETS, type ListQuery, type PlantPage, type Store } from '../store.js';
import { methodsOf, withFacets } from './facets.js';

/** Where durations go (metrics/histogram.ts's HotHistogram): one series per operation and backend. */
export interface DurationSink {
  series(labels: Readonly<Record<'operation' | 'backend', string>>): { observe(seconds: number): void };
}

type Method = (...args: unknown[]) => unknown;

/**
 * `store` with the duration of each operation observed in `histogram` (labels operation, the method's
 * name, and backend), success or failure alike, and a page the list cache answers at once
 * (`cachedPage`) as a listPlants. Every promise-returning method of every facet is an operation, found
 * by going through the facet (wrappers/facets.ts): a method added to a facet is timed without an edit
 * here. Applied by server.ts only when metrics are on: without them nothing wraps the store. Per call:
 * two clock reads, one closure, one promise reaction and a bucket search (its series is made once per
 * operation, when the store is wrapped); the caller gets the store's own promise.
 */
export function measureStore(store: Store, histogram: DurationSink): Store {
  const backend = store.backend;
  const facets: Record<string, unknown> = {};
  for (const name of FACETS) {
    const facet = store[name];
    const measured: Record<string, unknown> = {};
    for (const [operation, unbound] of methodsOf(facet)) {
      const method = (unbound as Method).bind(facet);
      if (operation === 'cachedPage') {
        measured[operation] = cachedPage(method as (query: ListQuery) => PlantPage | undefined, histogram, backend);
      } else if (operation === 'onEventsQueued' || operation === 'onFeedChanged') {
        // Registering a listener (the dispatcher's, the feed's) is not an operation anyone waits on.
        measured[operation] = method;
      } else {
        measured[operation] = timed(method, histogram.series({ operation, backend }));
      }
    }
    facets[name] = measured;
  }
  return withFacets(store, facets as Partial<Store>);
}

function timed(method: Method, series: { observe(seconds: number): void }): Method {
  return (...args: unknown[]): unknown => {
    const start = performance.now();
    const result = method(...args) as Promise<unknown>;
    const end = (): void => series.observe((performance.now() - start) / 1000);
    // A second reaction, not a wrapper: the caller's promise (and its rejection) is the store's own.
    result.then(end, end);
    return result;
  };
}

/**
 * A list the list cache answers at once is still a list the store answered: timed as listPlants, as
 * when every list went through listPlants (a miss is not: listPlants follows, and is timed itself).
 */
function cachedPage(
  method: (query: ListQuery) => PlantPage | undefined, histogram: DurationSink, backend: string,
): (query: ListQuery) => PlantPage | undefined {
  const lists = histogram.series({ operation: 'listPlants', backend });
  return (query) => {
    const start = performance.now();
    const page = method(query);
    if (page !== undefined) lists.observe((performance.now() - start) / 1000);
    return page;
  };
}
