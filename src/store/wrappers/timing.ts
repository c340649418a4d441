import type { ListQuery, PlantPage, Store } from '../store.js';

/** Where durations go (metrics/histogram.ts's HotHistogram): one series per operation and backend. */
export interface DurationSink {
  series(labels: Readonly<Record<'operation' | 'backend', string>>): { observe(seconds: number): void };
}

type StoreMethod = Exclude<keyof Store, 'backend'>;

/**
 * Which operations are timed as promises. Exhaustive by construction (a Store method added without a line here fails
 * to compile): registering the dispatcher's listener and closing are not operations anyone waits on.
 */
const TIMED: Record<StoreMethod, boolean> = {
  createPlant: true, listPlants: true, cachedPage: false, deletePlant: true, createToken: true, findTokenByHash: true,
  listTokens: true, revokeToken: true, hit: true, cursorKey: true, createWebhook: true, listWebhooks: true,
  deleteWebhook: true, listDeliveryAttempts: true, claimDeliveries: true, recordAttempts: true,
  releaseDeliveries: true, sweepWebhooks: true, webhookBacklog: true, ping: true,
  onEventsQueued: false, close: false,
};

/**
 * `store` with the duration of each operation observed in `histogram` (labels operation, backend),
 * success or failure alike, and a page the list cache answers at once (`cachedPage`) as a listPlants.
 * Applied by server.ts only when metrics are on: without them nothing wraps the store. Per call: two
 * clock reads, one closure, one promise reaction and a bucket search (its series is made once per
 * operation); the caller gets the store's own promise.
 */
export function measureStore(store: Store, histogram: DurationSink): Store {
  const backend = store.backend;
  // Built by name, as LateStore's handle is (http/plugins/readiness.ts): every member of Store is set below.
  const measured: Record<string, unknown> = { backend };
  const methods = store as unknown as Record<StoreMethod, (...args: unknown[]) => unknown>;
  for (const [name, timed] of Object.entries(TIMED) as [StoreMethod, boolean][]) {
    const method = methods[name].bind(store);
    if (!timed) {
      measured[name] = method;
      continue;
    }
    const series = histogram.series({ operation: name, backend });
    measured[name] = (...args: unknown[]): unknown => {
      const start = performance.now();
      const result = method(...args) as Promise<unknown>;
      const end = (): void => series.observe((performance.now() - start) / 1000);
      // A second reaction, not a wrapper: the caller's promise (and its rejection) is the store's own.
      result.then(end, end);
      return result;
    };
  }
  // A list the list cache answers at once is still a list the store answered: timed as listPlants, as
  // when every list went through listPlants (a miss is not: listPlants follows, and is timed itself).
  const lists = histogram.series({ operation: 'listPlants', backend });
  const cachedPage = store.cachedPage.bind(store);
  measured.cachedPage = (query: ListQuery): PlantPage | undefined => {
    const start = performance.now();
    const page = cachedPage(query);
    if (page !== undefined) lists.observe((performance.now() - start) / 1000);
    return page;
  };
  return measured as unknown as Store;
}
