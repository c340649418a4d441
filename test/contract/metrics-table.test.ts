import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERROR_ROWS } from '../../src/http/errors.js';
import { METRIC_FAMILIES } from '../../src/metrics/families.js';
import { Metrics } from '../../src/metrics/metrics.js';

interface Family {
  readonly type: string;
  /** Label names, where the registry tells them: a prom-client metric's own, else those of its samples. */
  readonly labels: readonly string[] | undefined;
}

/**
 * Every family a server's registry can hold: those made at start, the list cache's and the pool's (made
 * when a store reports it has one, as the stores do through storeObserver), with a sample in each
 * histogram so that its labels show.
 */
async function registryFamilies(): Promise<Map<string, Family>> {
  const metrics = new Metrics({ backend: 'sqlite', version: '0.0.0' });
  metrics.storeObserver.listCache(() => ({ hits: 0, misses: 0, entries: 0, plants: 0, bytes: 0, maxBytes: 0 }));
  metrics.storeObserver.pool(() => ({ total: 0, idle: 0, waiting: 0, max: 0 }));
  metrics.storeObserver.committed('sqlite', 1);
  metrics.http.observe('/plants', 'GET', 200, 0.001);
  const families = new Map<string, Family>();
  for (const metric of metrics.registry.getMetricsAsArray()) {
    const { name, type, values } = await (metric as unknown as { get(): Promise<{ name: string; type: string; values: { labels: object }[] }> }).get();
    const own = (metric as { labelNames?: string[] }).labelNames;
    const sampled = values[0] === undefined ? undefined : Object.keys(values[0].labels).filter((l) => l !== 'le');
    families.set(name, { type, labels: own ?? sampled });
  }
  return families;
}

test('the metrics table names every family the registry holds, with its type and labels', async () => {
  const families = await registryFamilies();
  assert.ok(families.has('plantstore_list_cache_hits_total') && families.has('plantstore_postgres_pool_connections'));
  const rows = METRIC_FAMILIES.flatMap((row, i) =>
    row.names.map((name) => ({ name, row, labels: row.labels === 'same' ? METRIC_FAMILIES[i - 1]?.labels : row.labels })),
  );
  for (const [name, family] of families) {
    const found = rows.find((r) => r.name === name || (r.name.endsWith('*') && name.startsWith(r.name.slice(0, -1))));
    assert.ok(found, `${name} is in no row of src/metrics/families.ts`);
    if (found.name.endsWith('*')) continue;
    assert.equal(found.row.type, family.type, name);
    if (family.labels !== undefined) assert.deepEqual(found.labels, family.labels, name);
  }
  // The backlog gauges are registered by a scrape that read the store's backlog: they are not here.
  const atScrape = ['plantstore_webhook_pending_events', 'plantstore_webhook_oldest_pending_age_seconds'];
  for (const { name } of rows) {
    if (name.endsWith('*') || atScrape.includes(name)) continue;
    assert.ok(families.has(name), `${name} is in the metrics table but not in the registry`);
  }
});

test('the refusal metric\'s row names every label the error table gives it', () => {
  const refusals = METRIC_FAMILIES.find((row) => row.names.includes('plantstore_auth_refusals_total'));
  for (const row of ERROR_ROWS) {
    if (row.metricLabel !== undefined) assert.ok(refusals?.meaning.includes(`\`${row.metricLabel}\``), row.metricLabel);
  }
});
