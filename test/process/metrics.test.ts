import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync, renameSync } from 'node:fs';
import { after, test, type TestContext } from 'node:test';
import { ConfigError } from '../../src/config/error.js';
import { loadConfig } from '../../src/config/load.js';
import { Histogram, Registry } from 'prom-client';
import { HotHistogram } from '../../src/metrics/histogram.js';
import { EVENT_LOOP_SAMPLE_MS, Metrics } from '../../src/metrics/metrics.js';
import { reasonLabel } from '../../src/http/plugins/metrics.js';
import { BACKEND, testDatabase } from '../helpers/app.js';
import { has, json, parse, serveWithMetrics, token, value, type Running, type Sample } from '../helpers/metrics.js';
import { spawnServer } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';
import { receiver, sleep } from '../helpers/webhook-receiver.js';

/** The TCP ports a process listens on, from /proc (Linux): its socket inodes in the LISTEN state (0A). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9] ?? '')) ports.push(parseInt((f[1] ?? '').split(':')[1] ?? '', 16));
    }
  }
  return ports.sort();
}

/**
 * One server with metrics on, shared by the tests that only use it through its API and its scrapes (each
 * reads what it caused as a difference between scrapes, so none depends on another having run or not).
 * Started by the first test that asks, so that a test run on its own starts it too; stopped with the file.
 * Authentication failures are not limited on it: one test sends many bad tokens on purpose.
 */
let shared: Promise<Running> | undefined;
// What a test's context would do at the test's end, done at the file's: registered here, at load, since
// an after() called while a test runs belongs to that test.
const sharedCleanups: Array<() => unknown> = [];
after(async () => {
  for (const cleanup of sharedCleanups.reverse()) await cleanup();
});
function sharedServer(): Promise<Running> {
  const fileScope = { after: (fn: () => unknown) => sharedCleanups.push(fn) } as unknown as TestContext;
  shared ??= serveWithMetrics(fileScope, { AUTH_FAILURE_LIMIT: 'off' });
  return shared;
}

test('METRICS_PORT and METRICS_HOST: empty is off, 0-65535, never PORT', () => {
  assert.equal(loadConfig({}, {}, process.cwd()).metricsPort, null);
  assert.equal(loadConfig({}, { METRICS_PORT: '9464' }, process.cwd()).metricsPort, 9464);
  assert.equal(loadConfig({}, { METRICS_PORT: '0' }, process.cwd()).metricsPort, 0);
  assert.equal(loadConfig({ 'metrics-port': '9100' }, { METRICS_PORT: '9464' }, process.cwd()).metricsPort, 9100);
  assert.equal(loadConfig({}, { METRICS_HOST: '::1' }, process.cwd()).metricsHost, '::1');
  for (const bad of ['65536', '-1', '80a', ' 9464', '0x10', '1e3']) {
    assert.throws(
      () => loadConfig({}, { METRICS_PORT: bad }, process.cwd()),
      (e) => e instanceof ConfigError && e.message === `METRICS_PORT must be empty (no metrics) or a whole number from 0 to 65535, got "${bad}"`,
      bad,
    );
  }
  assert.throws(() => loadConfig({}, { METRICS_HOST: '' }, process.cwd()), /METRICS_HOST must not be empty/);
  assert.throws(() => loadConfig({}, { PORT: '9464', METRICS_PORT: '9464' }, process.cwd()), /METRICS_PORT must differ from PORT/);
  assert.equal(loadConfig({}, { PORT: '0', METRICS_PORT: '0' }, process.cwd()).metricsPort, 0, 'two free ports are two ports');
});

test('the request-path histogram writes exactly what prom-client\'s own Histogram writes for the same observations', async () => {
  const buckets = [0.001, 0.01, 0.1, 1];
  const ours = new Registry();
  const theirs = new Registry();
  const hot = new HotHistogram<'route' | 'method'>({ name: 'h_seconds', help: 'help text', buckets, registry: ours });
  const reference = new Histogram({ name: 'h_seconds', help: 'help text', labelNames: ['route', 'method'], buckets, registers: [theirs] });
  const values = [0, 0.0005, 0.001, 0.0011, 0.01, 0.5, 1, 3, 1e9];
  for (const [route, method] of [['/plants', 'GET'], ['/plants/:id', 'DELETE'], ['say "hi"\\', 'GET']] as const) {
    const series = hot.series({ route, method });
    for (const v of values) {
      series.observe(v);
      reference.observe({ route, method }, v);
    }
  }
  const normal = (text: string) => parse(text).map((x) => `${x.name} ${JSON.stringify(Object.entries(x.labels).sort())} ${x.value}`).sort();
  const [a, b] = [await ours.metrics(), await theirs.metrics()];
  assert.deepEqual(normal(a), normal(b));
  assert.deepEqual(a.split('\n').filter((l) => l.startsWith('#')), b.split('\n').filter((l) => l.startsWith('#')));
});

test('refusal reasons become bounded label values', () => {
  assert.equal(reasonLabel('unknown'), 'unknown');
  assert.equal(reasonLabel('jwt: unknownKey'), 'jwt_unknown_key');
  assert.equal(reasonLabel('jwt: noExp'), 'jwt_no_exp');
  assert.equal(reasonLabel('something "odd" from elsewhere'), 'other');
});

test('metrics are off by default: no metrics listener, one listening port', { skip: process.platform !== 'linux' && 'reads /proc (Linux only)' }, async (t) => {
  const db = await testDatabase(t);
  const server = spawnServer(t, { DATABASE_URL: db.url });
  const api = await server.ready;
  t.after(() => server.stop());
  assert.doesNotMatch(server.logs(), /serving metrics/);
  assert.deepEqual(listeningPorts(server.child.pid as number), [Number(new URL(api).port)]);
  assert.equal((await fetch(`${api}/metrics`)).status, 404);
});

test('with METRICS_PORT, /metrics answers on a listener of its own in the text format; the API port answers 404', async () => {
  const run = await sharedServer();
  const before = await run.scrape();
  if (process.platform === 'linux') {
    assert.deepEqual(listeningPorts(run.server.child.pid as number), [Number(new URL(run.api).port), Number(new URL(run.metrics).port)].sort());
  }
  const res = await fetch(run.metrics);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const samples = parse(await res.text());
  assert.equal(value(samples, 'plantstore_build_info', { backend: BACKEND }), 1);
  assert.equal(value(samples, 'plantstore_store_up'), 1);
  assert.equal(value(samples, 'plantstore_webhook_pending_events'), 0);
  assert.equal(value(samples, 'plantstore_webhook_oldest_pending_age_seconds'), 0);
  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
    assert.ok(has(samples, name), `process metric ${name}`);
  }
  // The backend's own families, and not the other's.
  assert.equal(has(samples, 'plantstore_list_cache_hits_total'), BACKEND === 'sqlite');
  assert.equal(has(samples, 'plantstore_postgres_pool_connections'), BACKEND === 'postgres');
  if (BACKEND === 'postgres') assert.equal(value(samples, 'plantstore_postgres_pool_max_connections'), 10);

  const onApi = await fetch(`${run.api}/metrics`);
  assert.equal(onApi.status, 404);
  assert.equal(((await onApi.json()) as { error: number }).error, 40400);
  assert.equal((await fetch(run.metrics.replace('/metrics', '/'))).status, 404);
  const post = await fetch(run.metrics, { method: 'POST' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  // A scrape is not an API request: only the API's 404 above was counted.
  const counted = (samples: Sample[]) => new Map(samples.filter((s) => s.name === 'plantstore_http_requests_total').map((s) => [JSON.stringify(s.labels), s.value]));
  const [was, now] = [counted(before), counted(await run.scrape())];
  const moved = [...now].filter(([labels, n]) => n !== (was.get(labels) ?? 0)).map(([labels, n]) => [JSON.parse(labels), n - (was.get(labels) ?? 0)]);
  assert.deepEqual(moved, [[{ route: 'unmatched', method: 'GET', status_class: '4xx' }, 1]]);
});

test('requests, refusals, store operations, group commits, the list cache and the pool move as the API is used', async () => {
  const run = await sharedServer();
  const secret = await token(run.db, 'alice');
  const reader = await token(run.db, 'rita', 'plants:read');
  const before = await run.scrape();
  const created = { route: '/plants', method: 'POST', status_class: '2xx' };
  const createOp = { operation: 'createPlant', backend: BACKEND };

  assert.equal((await fetch(`${run.api}/plants`, { method: 'POST', headers: json(secret), body: '{"id":1,"name":"Monstera"}' })).status, 200);
  for (let i = 0; i < 3; i++) assert.equal((await fetch(`${run.api}/plants?limit=5`, { headers: json(secret) })).status, 200);
  assert.equal((await fetch(`${run.api}/plants/1`, { method: 'DELETE', headers: json(secret) })).status, 204);
  assert.equal((await fetch(`${run.api}/plants`, { headers: json(`pst_${randomBytes(20).toString('base64url')}`) })).status, 401);
  assert.equal((await fetch(`${run.api}/plants`)).status, 401);
  assert.equal((await fetch(`${run.api}/plants`, { headers: { authorization: 'Bearer {not a token}' } })).status, 401);
  assert.equal((await fetch(`${run.api}/plants`, { method: 'POST', headers: json(reader), body: '{"id":2,"name":"Fern"}' })).status, 403);
  assert.equal((await fetch(`${run.api}/nowhere`)).status, 404);

  const after = await run.scrape();
  const delta = (name: string, labels: Record<string, string> = {}) => (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);
  assert.equal(delta('plantstore_http_requests_total', created), 1);
  assert.equal(delta('plantstore_http_request_duration_seconds_count', created), 1);
  assert.ok(delta('plantstore_http_request_duration_seconds_sum', created) > 0);
  assert.equal(delta('plantstore_http_request_duration_seconds_bucket', { ...created, le: '+Inf' }), 1);
  assert.equal(delta('plantstore_http_requests_total', { route: '/plants', method: 'GET', status_class: '2xx' }), 3);
  assert.equal(delta('plantstore_http_requests_total', { route: '/plants/:id', method: 'DELETE', status_class: '2xx' }), 1);
  assert.equal(delta('plantstore_http_requests_total', { route: '/plants', method: 'GET', status_class: '4xx' }), 3);
  assert.equal(delta('plantstore_http_requests_total', { route: '/plants', method: 'POST', status_class: '4xx' }), 1);
  assert.equal(delta('plantstore_http_requests_total', { route: 'unmatched', method: 'GET', status_class: '4xx' }), 1);
  for (const reason of ['unknown', 'missing_token', 'malformed', 'insufficient_scope']) {
    assert.equal(delta('plantstore_auth_refusals_total', { reason }), 1, reason);
  }
  assert.equal(delta('plantstore_store_operation_duration_seconds_count', createOp), 1);
  assert.equal(delta('plantstore_store_operation_duration_seconds_count', { operation: 'listPlants', backend: BACKEND }), 3);
  assert.equal(delta('plantstore_store_operation_duration_seconds_count', { operation: 'deletePlant', backend: BACKEND }), 1);
  assert.ok(delta('plantstore_store_operation_duration_seconds_count', { operation: 'findTokenByHash', backend: BACKEND }) >= 3);
  // The create's group commit (SQLite: the delete's too), of one write each.
  assert.ok(delta('plantstore_store_group_commit_writes_count', { backend: BACKEND }) >= 1);
  assert.ok(delta('plantstore_store_group_commit_writes_bucket', { backend: BACKEND, le: '1' }) >= 1);
  if (BACKEND === 'sqlite') {
    // The same page three times: read once, then served from the cache (until the delete made it stale).
    assert.equal(delta('plantstore_list_cache_misses_total'), 1);
    assert.equal(delta('plantstore_list_cache_hits_total'), 2);
    assert.ok((value(after, 'plantstore_list_cache_bytes') ?? 0) > 0);
    assert.ok((value(after, 'plantstore_list_cache_entries') ?? 0) >= 1);
  } else {
    assert.ok((value(after, 'plantstore_postgres_pool_connections') ?? 0) >= 1);
    assert.ok((value(after, 'plantstore_postgres_pool_idle_connections') ?? -1) >= 0);
    assert.equal(value(after, 'plantstore_postgres_pool_waiting_requests'), 0);
  }
});

test('label values stay bounded: many URLs, ids and tokens add no series', async () => {
  const run = await sharedServer();
  const secret = await token(run.db, 'alice');
  const round = async () => {
    for (let i = 0; i < 25; i++) {
      const id = randomBytes(6).readUIntBE(0, 6);
      const junk = randomBytes(6).toString('hex');
      await fetch(`${run.api}/plants/${id}`, { method: 'DELETE', headers: json(secret) });
      await fetch(`${run.api}/plants?limit=${(i % 7) + 1}&tag=${junk}`, { headers: json(secret) });
      await fetch(`${run.api}/${junk}/${id}?q=${junk}`);
      await fetch(`${run.api}/plants`, { headers: json(`pst_${junk}`) });
      await fetch(`${run.api}/plants/${junk}`, { method: 'DELETE', headers: json(secret) });
    }
  };
  await round();
  const first = await run.scrape();
  await round();
  const second = await run.scrape();
  const series = (samples: Sample[]) => samples.filter((s) => s.name.startsWith('plantstore_')).map((s) => `${s.name}${JSON.stringify(s.labels)}`);
  assert.deepEqual(series(second).sort(), series(first).sort(), 'a second round of new URLs, ids and tokens adds no series');
  const values = new Set(second.flatMap((s) => Object.values(s.labels)));
  for (const v of values) assert.doesNotMatch(v, /[0-9a-f]{12}|pst_|alice/, `label value ${v}`);
  const routes = new Set(second.filter((s) => s.name === 'plantstore_http_requests_total').map((s) => s.labels.route));
  assert.deepEqual([...routes].sort(), ['/plants', '/plants/:id', 'unmatched']);
});

test('a webhook delivery moves the attempts counter, and the backlog gauges while it is pending', async (t) => {
  const hook = await receiver(t, (_request, n) => (n === 1 ? 503 : n === 2 ? 'hang' : 200));
  const run = await serveWithMetrics(t, { WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s', WEBHOOK_TIMEOUT: '60s' });
  const secret = await token(run.db, 'alice');
  const registered = await fetch(`${run.api}/webhooks`, { method: 'POST', headers: json(secret), body: JSON.stringify({ url: hook.url }) });
  assert.equal(registered.status, 201);
  assert.equal((await fetch(`${run.api}/plants`, { method: 'POST', headers: json(secret), body: '{"id":7,"name":"Fern"}' })).status, 200);

  // The first attempt failed with 503 and the second hangs: the event is pending, and ages.
  await hook.waitFor(2);
  // Scraped until the event is a second old, as the gauge itself says.
  const pending = await eventually(async () => {
    const samples = await run.scrape();
    return (value(samples, 'plantstore_webhook_oldest_pending_age_seconds') ?? 0) >= 1 ? samples : undefined;
  }, 'the pending event to age a second');
  assert.equal(value(pending, 'plantstore_webhook_delivery_attempts_total', { result: 'retry' }), 1);
  assert.equal(value(pending, 'plantstore_webhook_pending_events'), 1);
  assert.ok((value(pending, 'plantstore_webhook_oldest_pending_age_seconds') ?? 0) >= 1);
  hook.answerHanging(200);

  const done = await eventually(async () => {
    const samples = await run.scrape();
    return value(samples, 'plantstore_webhook_delivery_attempts_total', { result: 'delivered' }) === 1 &&
      value(samples, 'plantstore_webhook_pending_events') === 0 ? samples : undefined;
  }, 'the delivery to be recorded');
  assert.equal(value(done, 'plantstore_webhook_oldest_pending_age_seconds'), 0);
  assert.ok((value(done, 'plantstore_store_operation_duration_seconds_count', { operation: 'claimDeliveries', backend: BACKEND }) ?? 0) >= 1);
});

test('a scrape answers while the store is unavailable: store_up 0, no backlog gauges; then recovers', async (t) => {
  const run = await serveWithMetrics(t);
  if (run.db.config.kind === 'sqlite') {
    const path = run.db.config.path;
    renameSync(path, `${path}.away`);
    const down = await eventually(async () => {
      const samples = await run.scrape();
      return value(samples, 'plantstore_store_up') === 0 ? samples : undefined;
    }, 'the lost file to be noticed');
    assert.equal(has(down, 'plantstore_webhook_pending_events'), false);
    assert.equal(has(down, 'plantstore_webhook_oldest_pending_age_seconds'), false);
    renameSync(`${path}.away`, path);
  } else {
    // The backlog read waits on a lock the test holds (ping does not): the scrape answers within its
    // bound (2 s) without the backlog, rather than waiting for the statement timeout (5 s).
    const url = run.db.url;
    const { default: pg } = await import('pg');
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    t.after(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE');
    const started = Date.now();
    const held = await run.scrape();
    const took = Date.now() - started;
    assert.ok(took < 4500, `a scrape took ${took} ms with the backlog read blocked`);
    assert.equal(has(held, 'plantstore_webhook_pending_events'), false);
    assert.equal(value(held, 'plantstore_store_up'), 1, 'the readiness check itself was answered');
    await holder.query('ROLLBACK');
  }
  const back = await eventually(async () => {
    const samples = await run.scrape();
    return value(samples, 'plantstore_store_up') === 1 && has(samples, 'plantstore_webhook_pending_events') ? samples : undefined;
  }, 'the store to be back');
  assert.equal(value(back, 'plantstore_webhook_pending_events'), 0);
});

test('a metrics port in use fails start-up with one line naming it', async (t) => {
  const run = await sharedServer();
  const port = new URL(run.metrics).port;
  const db = await testDatabase(t);
  const second = spawnServer(t, { DATABASE_URL: db.url, METRICS_PORT: port });
  assert.equal(await second.exited, 1);
  assert.match(second.fatal(), new RegExp(`cannot listen for metrics on 127\\.0\\.0\\.1:${port}: the port is already in use by another process \\(EADDRINUSE\\)`));
});

test('the event loop lag percentiles, sampled every EVENT_LOOP_SAMPLE_MS, still see a stall of the event loop', async () => {
  const metrics = new Metrics({ backend: BACKEND, version: 'test' });
  // These waits are the sampler's own intervals: the histogram fills only as real samples fall due, and
  // nothing announces a sample, so the test lets a few intervals pass (each a fraction of a second).
  await sleep(4 * EVENT_LOOP_SAMPLE_MS);
  const maxLag = async () => value(parse(await metrics.registry.metrics()), 'nodejs_eventloop_lag_max_seconds') ?? Number.NaN;
  const quiet = await maxLag();
  assert.ok(quiet < 0.2, `no stall yet: max ${quiet} s`);
  // A scrape resets the histogram, and its first sample after a reset only starts the next interval.
  await sleep(3 * EVENT_LOOP_SAMPLE_MS);
  const until = performance.now() + 300;
  while (performance.now() < until); // the event loop held for 300 ms
  await sleep(2 * EVENT_LOOP_SAMPLE_MS);
  // prom-client sets the percentiles in one collector and then resets the histogram, which may come after
  // the family is read: a scrape shows what the one before it collected, so two are read.
  const stalled = Math.max(await maxLag(), await maxLag());
  assert.ok(stalled >= 0.2, `max ${stalled} s after a 300 ms stall`);
});

test('an idle server with metrics on wakes its main thread about 20 times a second (the event loop sampled every 50 ms), not 100', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  // Two idle processes woken only by a timer, one every 10 ms (prom-client's default sampling) and one
  // every 50 ms, are counted over the same window as the server: a loaded machine delays all three
  // alike, so the server is compared with them rather than with fixed rates a busy machine can cross.
  const reference = (ms: number) => {
    const child = spawn(process.execPath, ['-e', `setInterval(() => {}, ${ms}); process.stdout.write('up')`], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => child.kill());
    return once(child.stdout, 'data').then(() => child.pid as number);
  };
  const [tenMs, fiftyMs, run] = await Promise.all([reference(10), reference(EVENT_LOOP_SAMPLE_MS), serveWithMetrics(t)]);
  await run.scrape();
  const pid = run.server.child.pid as number;
  // Blocking waits of the main thread (the thread whose id is the process id): each timer that wakes it is one.
  const waits = (p: number) => Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${p}/task/${p}/status`, 'utf8'))?.[1]);
  const counts = () => [pid, tenMs, fiftyMs].map(waits);
  // The window is the measurement itself: wake-ups are counted over it (nothing else to await), after a
  // moment for the start-up's own work to end.
  await sleep(500);
  const before = counts();
  const started = performance.now();
  await sleep(2000);
  const elapsed = performance.now() - started;
  const [perSecond, tenPerSecond, fiftyPerSecond] = counts().map((n, i) => ((n - before[i]!) * 1000) / elapsed) as [number, number, number];
  const rates = `${perSecond.toFixed(0)} wake-ups a second; a 10 ms timer ${tenPerSecond.toFixed(0)}, a 50 ms one ${fiftyPerSecond.toFixed(0)}`;
  // prom-client's default sampling (10 ms) woke it as often as the 10 ms timer; 50 ms makes about a fifth
  // of that, plus a few.
  assert.ok(perSecond < tenPerSecond / 2, rates);
  assert.ok(perSecond > fiftyPerSecond / 2, `${rates}: the event loop is sampled`);
});
