// npm run bench [-- --postgres postgres://…] [--rounds 3] [--duration 8] [--baseline DIR] [--webhooks-only] [--jwt-only]
//                 [--metrics-only]
//
// Loads each system on loopback with wrk and prints one table: requests/s, p50 and p99 latency, the
// server's CPU time per request, the ratio to the reference, and plantstore's peak RSS. --baseline DIR
// adds the plantstore build of another checkout (its bin/plantstore.js, built) to scenarios 1 and 2, in
// the same rounds: a before/after comparison that machine noise between runs cannot blur. Systems take turns (A B A B …) and each number
// is the median of the rounds, because these machines are shared and noisy. Never part of npm test.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { BENCH_USER, dropPostgresSchema, registerWebhook, seedPostgres, seedSqlite, USERS, writeJsonServerDb } from './seed.js';
import { freePort, peakRssMb, resetPeakRss, startBare, startJsonServer, startJwks, startPlantstore, startReceiver, type System } from './systems.js';
import { cpuMicros, ensureWrk, wrk } from './wrk.js';

const { values: args } = parseArgs({
  options: {
    postgres: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    baseline: { type: 'string' },
    // Runs scenario 4 (webhooks) only: a quicker check of the delivery path.
    'webhooks-only': { type: 'boolean', default: false },
    // Runs scenario 1's opaque-token and JWT rows only: a quicker check of the JWT path.
    'jwt-only': { type: 'boolean', default: false },
    // Runs scenarios 1 and 2 with metrics off and on only: a quicker check of what metrics cost.
    'metrics-only': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const DURATION_S = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const WARMUP_S = 2;
const SMALL = 10_000;
const LARGE = 1_000_000;
const postgresUrl = args.postgres ?? (process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined);

type Kind = 'list' | 'create';
interface Target {
  readonly system: System;
  readonly kind: Kind;
  /** Path and headers of the request; creates get a unique id each. */
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The ids of creates answered 2xx, to check afterwards that each one was stored. */
  readonly acknowledged: number[];
  readonly results: Array<{ rps: number; p50: number; p99: number; errors: number; cpuUs: number }>;
  rssMb?: number;
  /** A server with metrics on: scraped every SCRAPE_INTERVAL_MS while it is loaded, as Prometheus would. */
  readonly scrape?: Scraper;
}

/**
 * Prometheus scrapes every 15 s by default; the bench scrapes three times as often (and once as a load
 * starts), only while that server is loaded, so the scrapes cost that server and never the others.
 */
const SCRAPE_INTERVAL_MS = 5000;

interface Scraper {
  readonly url: string;
  scrapes: number;
  failures: number;
  bytes: number;
}

function scrapeDuring(scraper: Scraper | undefined): () => void {
  if (scraper === undefined) return () => undefined;
  const once = (): void => {
    fetch(scraper.url).then(async (res) => {
      const text = await res.text();
      scraper.scrapes++;
      scraper.bytes = text.length;
      if (res.status !== 200 || !text.includes('plantstore_http_requests_total')) scraper.failures++;
    }, () => scraper.failures++);
  };
  once();
  const timer = setInterval(once, SCRAPE_INTERVAL_MS);
  return () => clearInterval(timer);
}

let nextId = 1_000_000_000_000;

async function load(target: Target, seconds: number, warmup = false): Promise<void> {
  const firstId = nextId;
  // Far more ids than one load can use, so ids stay unique across loads.
  if (target.kind === 'create') nextId += 100_000_000;
  const cpuBefore = cpuMicros(target.system.pid);
  const stopScraping = scrapeDuring(target.scrape);
  const result = await wrk({
    url: target.system.url,
    method: target.kind === 'list' ? 'GET' : 'POST',
    path: target.path,
    headers: target.kind === 'list' ? target.headers : { ...target.headers, 'content-type': 'application/json' },
    connections: CONNECTIONS,
    seconds,
    firstId,
  }).finally(stopScraping);
  const cpuUs = (cpuMicros(target.system.pid) - cpuBefore) / Math.max(1, result.requests);
  // A loop: spreading hundreds of thousands of ids as arguments overflows the stack.
  for (const id of result.acknowledged) target.acknowledged.push(id);
  if (warmup) return;
  target.results.push({ rps: result.rps, p50: result.p50, p99: result.p99, errors: result.errors, cpuUs });
}

/** Warms every target up, then runs the rounds with the targets taking turns. */
async function scenario(title: string, targets: Target[]): Promise<void> {
  process.stderr.write(`${title}\n`);
  for (const t of targets) if (t.system.name.startsWith('plantstore')) resetPeakRss(t.system.pid);
  for (const t of targets) await load(t, WARMUP_S, true);
  for (let round = 0; round < ROUNDS; round++) {
    const line = [];
    for (const t of targets) {
      await load(t, DURATION_S);
      line.push(`${t.system.name} ${Math.round(t.results.at(-1)?.rps ?? 0)}`);
    }
    process.stderr.write(`  round ${round + 1}: ${line.join(', ')} req/s\n`);
  }
  for (const t of targets) if (t.system.name.startsWith('plantstore')) t.rssMb = peakRssMb(t.system.pid);
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

interface WebhookRound {
  /** Deliveries received while the creates ran, per second of load. */
  duringLoad: number;
  /** Deliveries per second from the end of the load until every acknowledged create was delivered. */
  drain: number;
  /** Deliveries per second over load and drain together: what the dispatcher sustains. */
  overall: number;
  drained: boolean;
}

/** Waits until the receiver has seen `expected` distinct events (or `timeoutMs` passed); returns when it stopped waiting. */
async function untilDelivered(receiver: Receiver, expected: number, timeoutMs: number): Promise<{ unique: number; received: number; ms: number }> {
  const started = performance.now();
  for (;;) {
    const stats = await receiver.stats();
    const ms = performance.now() - started;
    if (stats.unique >= expected || ms > timeoutMs) return { ...stats, ms };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Scenario 4: creates with one webhook endpoint registered (receiver on loopback answering 200 at once)
 * against the same server without one. After each load of the webhook server the bench waits for its
 * backlog to drain, so that the deliveries never run during the other server's turn (which would slow
 * the reference and flatter the ratio), and measures the delivery rate on the way.
 */
async function webhookScenario(title: string, plain: Target, hooked: Target, receiver: Receiver): Promise<WebhookRound[]> {
  process.stderr.write(`${title}\n`);
  const rounds: WebhookRound[] = [];
  const drainTimeoutMs = 180_000;
  const loadHooked = async (seconds: number, warmup: boolean) => {
    const before = await receiver.stats();
    const started = performance.now();
    await load(hooked, seconds, warmup);
    const loadMs = performance.now() - started;
    const after = await receiver.stats();
    const end = await untilDelivered(receiver, hooked.acknowledged.length, drainTimeoutMs);
    const created = hooked.acknowledged.length - before.unique;
    const round = {
      duringLoad: ((after.unique - before.unique) * 1000) / loadMs,
      drain: end.ms > 0 ? ((end.unique - after.unique) * 1000) / end.ms : Infinity,
      overall: (created * 1000) / (loadMs + end.ms),
      drained: end.unique >= hooked.acknowledged.length,
    };
    if (!warmup) rounds.push(round);
    return round;
  };
  await load(plain, WARMUP_S, true);
  await loadHooked(WARMUP_S, true);
  for (let round = 0; round < ROUNDS; round++) {
    await load(plain, DURATION_S);
    const r = await loadHooked(DURATION_S, false);
    process.stderr.write(`  round ${round + 1}: ${plain.system.name} ${Math.round(plain.results.at(-1)?.rps ?? 0)}, ` +
      `${hooked.system.name} ${Math.round(hooked.results.at(-1)?.rps ?? 0)} req/s; deliveries ${Math.round(r.duringLoad)}/s during the load, ` +
      `${Math.round(r.drain)}/s draining${r.drained ? '' : ' (NOT DRAINED)'}\n`);
  }
  return rounds;
}

function webhookSummary(name: string, rounds: WebhookRound[], hooked: Target, stats: { received: number; unique: number }): string {
  const acknowledged = hooked.acknowledged.length;
  const overall = median(rounds.map((r) => r.overall));
  return `webhooks (${name}): deliveries ${Math.round(median(rounds.map((r) => r.duringLoad))).toLocaleString('en-US')}/s during the creates, ` +
    `${Math.round(median(rounds.map((r) => r.drain))).toLocaleString('en-US')}/s draining the backlog, ` +
    `${Math.round(overall).toLocaleString('en-US')}/s over load and drain (goal ≥ 2,000 on SQLite: ${overall >= 2000 ? 'met' : 'MISSED'}); ` +
    `${acknowledged.toLocaleString('en-US')} creates answered 200, ${stats.unique.toLocaleString('en-US')} distinct events delivered` +
    `${stats.unique >= acknowledged ? ' (every one)' : ': MISSING SOME'}, ${(stats.received - stats.unique).toLocaleString('en-US')} duplicates` +
    `${rounds.every((r) => r.drained) ? '' : '; a backlog did NOT drain within 3 minutes'}`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const stat = (t: Target) => ({
  rps: median(t.results.map((r) => r.rps)),
  p50: median(t.results.map((r) => r.p50)),
  p99: median(t.results.map((r) => r.p99)),
  errors: t.results.reduce((n, r) => n + r.errors, 0),
  cpuUs: median(t.results.map((r) => r.cpuUs)),
});

interface Row {
  scenario: string;
  target: Target;
  reference?: Target;
  referenceName?: string;
  goal?: number;
}

function printTable(rows: Row[]): void {
  const header = ['scenario', 'system', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'ratio', 'target', 'peak RSS', 'non-2xx'];
  const lines = rows.map(({ scenario: s, target, reference, referenceName, goal }) => {
    const m = stat(target);
    const ratio = reference ? m.rps / stat(reference).rps : undefined;
    return [
      s,
      target.system.name,
      Math.round(m.rps).toLocaleString('en-US'),
      m.p50.toFixed(1),
      m.p99.toFixed(1),
      m.cpuUs.toFixed(0),
      ratio === undefined ? '' : `${ratio.toFixed(2)}× ${referenceName}`,
      goal === undefined || ratio === undefined ? '' : `≥ ${goal} ${ratio >= goal ? 'met' : 'MISSED'}`,
      target.rssMb === undefined ? '' : `${target.rssMb} MB`,
      String(m.errors),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
}

/** How many of `ids` the store holds for the bench user. */
async function countStored(databaseUrl: string, ids: number[]): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: Database } = await import('../src/store/sqlite-driver.js');
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    const has = db.prepare('SELECT 1 FROM plants WHERE owner = ? AND id = ?').pluck();
    const n = ids.filter((id) => has.get(BENCH_USER, id) !== undefined).length;
    db.close();
    return n;
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const res = await client
    .query('SELECT count(*)::int AS n FROM plants WHERE owner = $1 AND id = ANY($2::bigint[])', [BENCH_USER, ids])
    .finally(() => client.end());
  return res.rows[0].n;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-bench-'));
  const started = Date.now();
  const systems: System[] = [];
  const schemas: string[] = [];
  try {
    ensureWrk();
    const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
    console.log(`plantstore bench, ${new Date().toISOString().slice(0, 10)}: ${availableParallelism()} cores (${cpu}), Node ${process.version}, ` +
      `load generator wrk (1 thread) on the same machine, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${DURATION_S} s each, medians`);
    process.stderr.write('seeding stores…\n');
    const small = join(dir, 'small.db');
    const large = join(dir, 'large.db');
    const smallToken = await seedSqlite(small, SMALL);
    const only4 = args['webhooks-only'];
    const jwtOnly = args['jwt-only'];
    const metricsOnly = args['metrics-only'];
    const largeToken = only4 || jwtOnly || metricsOnly ? '' : await seedSqlite(large, LARGE);
    // One server per SQLite store: every other server gets a copy (same plants, same token).
    for (const copy of ['nocache', 's3', 's3-nocache', 'baseline', 'wh0', 'wh1', 'jwt', 'metrics']) copyFileSync(small, `${small}.${copy}`);
    if (!only4 && !jwtOnly && !metricsOnly) copyFileSync(large, `${large}.nocache`);
    writeJsonServerDb(join(dir, 'json-server.json'), SMALL);
    let pgSmall: { url: string; token: string } | undefined;
    let pgLarge: { url: string; token: string } | undefined;
    if (postgresUrl && !only4 && !jwtOnly) {
      const tag = Math.random().toString(16).slice(2, 8);
      schemas.push(`bench_small_${tag}`, `bench_large_${tag}`);
      pgSmall = await seedPostgres(postgresUrl, `bench_small_${tag}`, SMALL);
      if (!metricsOnly) pgLarge = await seedPostgres(postgresUrl, `bench_large_${tag}`, LARGE);
    }

    const start = async <T extends System>(s: Promise<T>) => {
      const system = await s;
      systems.push(system);
      return system;
    };
    const log = (name: string) => join(dir, `${name}.log`);
    const sqliteSmall = await start(startPlantstore('plantstore sqlite', `sqlite:${small}`, log('sqlite-small')));
    // The same store with the page cache off: the cost of a query per request.
    const noCache = { LIST_CACHE_PLANTS: '0' };
    const sqliteSmallNoCache = await start(startPlantstore('plantstore sqlite, no cache', `sqlite:${small}.nocache`, log('sqlite-small-nc'), noCache));
    const postgresSmall = pgSmall && (await start(startPlantstore('plantstore postgres', pgSmall.url, log('pg-small'))));
    const baseline = args.baseline;
    const baselineSqlite = baseline === undefined ? undefined
      : await start(startPlantstore('baseline sqlite', `sqlite:${small}.baseline`, log('baseline-sqlite'), {}, baseline));
    // The same schema as the row above: instances of any version may share a PostgreSQL database.
    const baselinePostgres = baseline === undefined || !pgSmall ? undefined
      : await start(startPlantstore('baseline postgres', pgSmall.url, log('baseline-pg'), {}, baseline));

    // The bare server answers the very bytes plantstore answers, so only the work behind them differs.
    const listPath = '/plants?limit=20';
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    const listed = await fetch(`${sqliteSmall.url}${listPath}`, { headers: auth(smallToken) });
    const created = await fetch(`${sqliteSmall.url}/plants`, {
      method: 'POST',
      headers: { ...auth(smallToken), 'content-type': 'application/json' },
      body: JSON.stringify({ id: nextId - 1, name: 'bench plant' }), // below the counted range
    });
    const headersOf = (r: Response) => ({ 'content-type': r.headers.get('content-type') ?? '', ...(r.headers.get('link') ? { link: r.headers.get('link') as string } : {}) });
    const bare = await start(startBare({
      list: { body: await listed.text(), headers: headersOf(listed) },
      create: { body: await created.text(), headers: headersOf(created) },
    }));
    const jsonServer = await start(startJsonServer(join(dir, 'json-server.json')));

    const target = (system: System, kind: Kind, token?: string, path = kind === 'list' ? listPath : '/plants'): Target =>
      ({ system, kind, path, headers: token ? auth(token) : {}, acknowledged: [], results: [] });

    // The same list with a JWT from an identity provider (bench/jwks-server.mjs), on a server that
    // accepts both kinds of token: after the first request, a verified JWT costs a map lookup.
    const jwks = await start(startJwks(BENCH_USER, 'plantstore-bench'));
    const sqliteJwt = await start(startPlantstore('plantstore sqlite, JWT', `sqlite:${small}.jwt`, log('sqlite-jwt'),
      { JWT_JWKS_URL: jwks.jwksUrl, JWT_AUDIENCE: 'plantstore-bench' }));
    const jwtListed = await fetch(`${sqliteJwt.url}${listPath}`, { headers: auth(jwks.token) });
    if (jwtListed.status !== 200 || (await jwtListed.text()) !== (await (await fetch(`${sqliteSmall.url}${listPath}`, { headers: auth(smallToken) })).text())) {
      throw new Error(`the JWT list does not answer what the opaque-token list does (${jwtListed.status})`);
    }
    const s1 = '1. GET /plants?limit=20, 10k plants';
    if (jwtOnly) {
      const opaque = target(sqliteSmall, 'list', smallToken);
      const jwt = target(sqliteJwt, 'list', jwks.token);
      await scenario(s1, [opaque, jwt]);
      console.log();
      printTable([{ scenario: s1, target: opaque }, { scenario: '', target: jwt, reference: opaque, referenceName: 'opaque', goal: 0.95 }]);
      console.log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
      return;
    }

    // The same servers with metrics on (METRICS_PORT), scraped while loaded: lists and creates against
    // the rows above with metrics off. PostgreSQL's shares the schema, as the baseline's does.
    const withMetrics = async (name: string, databaseUrl: string, file: string): Promise<{ system: System; scrape: Scraper }> => {
      const port = await freePort();
      const system = await start(startPlantstore(name, databaseUrl, log(file), { METRICS_PORT: String(port) }));
      return { system, scrape: { url: `http://127.0.0.1:${port}/metrics`, scrapes: 0, failures: 0, bytes: 0 } };
    };
    const sqliteMetrics = await withMetrics('plantstore sqlite, metrics on', `sqlite:${small}.metrics`, 'sqlite-metrics');
    const postgresMetrics = pgSmall && (await withMetrics('plantstore postgres, metrics on', pgSmall.url, 'pg-metrics'));
    const measured = (m: { system: System; scrape: Scraper }, kind: Kind, token: string): Target => ({ ...target(m.system, kind, token), scrape: m.scrape });
    const metricsRows = {
      list: {
        sqlite: measured(sqliteMetrics, 'list', smallToken),
        postgres: postgresMetrics && pgSmall ? measured(postgresMetrics, 'list', pgSmall.token) : undefined,
      },
      create: {
        sqlite: measured(sqliteMetrics, 'create', smallToken),
        postgres: postgresMetrics && pgSmall ? measured(postgresMetrics, 'create', pgSmall.token) : undefined,
      },
    };
    const scrapeSummary = () => [sqliteMetrics, postgresMetrics].flatMap((m) => (m ? [
      `scrapes (${m.system.name}): ${m.scrape.scrapes} every ${SCRAPE_INTERVAL_MS / 1000} s during its loads, ` +
      `${m.scrape.failures === 0 ? 'every one answered 200' : `${m.scrape.failures} FAILED`}, ${Math.round(m.scrape.bytes / 1024)} KB each`,
    ] : []));
    const vsOff = (t: Target | undefined, off: Target | undefined): Row[] =>
      (t && off ? [{ scenario: '', target: t, reference: off, referenceName: 'off', goal: 0.95 }] : []);
    const s2 = '2. POST /plants, unique ids, durable';
    if (metricsOnly) {
      const off = {
        list: { sqlite: target(sqliteSmall, 'list', smallToken), postgres: postgresSmall && pgSmall ? target(postgresSmall, 'list', pgSmall.token) : undefined },
        create: { sqlite: target(sqliteSmall, 'create', smallToken), postgres: postgresSmall && pgSmall ? target(postgresSmall, 'create', pgSmall.token) : undefined },
      };
      const present = (...ts: Array<Target | undefined>) => ts.filter((t): t is Target => t !== undefined);
      await scenario(s1, present(off.list.sqlite, metricsRows.list.sqlite, off.list.postgres, metricsRows.list.postgres));
      await scenario(s2, present(off.create.sqlite, metricsRows.create.sqlite, off.create.postgres, metricsRows.create.postgres));
      console.log();
      printTable([
        { scenario: s1, target: off.list.sqlite }, ...vsOff(metricsRows.list.sqlite, off.list.sqlite),
        ...(off.list.postgres ? [{ scenario: '', target: off.list.postgres }] : []), ...vsOff(metricsRows.list.postgres, off.list.postgres),
        { scenario: s2, target: off.create.sqlite }, ...vsOff(metricsRows.create.sqlite, off.create.sqlite),
        ...(off.create.postgres ? [{ scenario: '', target: off.create.postgres }] : []), ...vsOff(metricsRows.create.postgres, off.create.postgres),
      ]);
      console.log();
      for (const line of scrapeSummary()) console.log(line);
      console.log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
      return;
    }

    // Scenario 4 first, on processes of its own: webhooks. Each pair of servers has stores of its own
    // (copies of the small store; fresh PostgreSQL schemas), the second with one endpoint registered.
    const receiver = await start(startReceiver());
    const s4 = '4. POST /plants, one webhook endpoint vs none';
    const hookedEnv = { WEBHOOK_ALLOW_PRIVATE: 'on' };
    await registerWebhook(`sqlite:${small}.wh1`, `${receiver.url}/hook`);
    const whSqlite = {
      plain: target(await start(startPlantstore('plantstore sqlite, no webhook', `sqlite:${small}.wh0`, log('wh0'), hookedEnv)), 'create', smallToken),
      hooked: target(await start(startPlantstore('plantstore sqlite, 1 webhook', `sqlite:${small}.wh1`, log('wh1'), hookedEnv)), 'create', smallToken),
    };
    const rows4: Row[] = [];
    const summaries: string[] = [];
    let received = { received: 0, unique: 0 };
    const sqliteRounds = await webhookScenario(s4, whSqlite.plain, whSqlite.hooked, receiver);
    received = await receiver.stats();
    summaries.push(webhookSummary('sqlite', sqliteRounds, whSqlite.hooked, received));
    rows4.push(
      { scenario: s4, target: whSqlite.plain },
      { scenario: '', target: whSqlite.hooked, reference: whSqlite.plain, referenceName: 'none', goal: 0.9 },
    );
    await whSqlite.plain.system.stop();
    await whSqlite.hooked.system.stop();
    // The bound: a bare server doing nothing but answering and POSTing each create on (4b).
    const bareBodies = {
      list: { body: '[]', headers: { 'content-type': 'application/json; charset=utf-8' } },
      create: { body: '{"name":"bench plant"}', headers: { 'content-type': 'application/json; charset=utf-8' } },
    };
    const bare4 = {
      plain: target(await start(startBare(bareBodies)), 'create'),
      forward: target(await start(startBare(bareBodies, `${receiver.url}/hook`)), 'create'),
    };
    const s4b = '4b. the same for a bare server: the bound';
    process.stderr.write(`${s4b}\n`);
    const settle = async () => {
      // Until the forwarding server has sent what it queued, so that it never runs in the other's turn.
      for (let last = -1, now = (await receiver.stats()).received; now !== last; ) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        [last, now] = [now, (await receiver.stats()).received];
      }
    };
    await load(bare4.plain, WARMUP_S, true);
    await load(bare4.forward, WARMUP_S, true);
    await settle();
    for (let round = 0; round < ROUNDS; round++) {
      await load(bare4.plain, DURATION_S);
      await load(bare4.forward, DURATION_S);
      await settle();
      process.stderr.write(`  round ${round + 1}: ${Math.round(bare4.plain.results.at(-1)?.rps ?? 0)}, ` +
        `${Math.round(bare4.forward.results.at(-1)?.rps ?? 0)} req/s\n`);
    }
    rows4.push(
      { scenario: s4b, target: bare4.plain },
      { scenario: '', target: bare4.forward, reference: bare4.plain, referenceName: 'bare' },
    );
    await bare4.plain.system.stop();
    await bare4.forward.system.stop();
    received = await receiver.stats();
    if (postgresUrl) {
      const tag = Math.random().toString(16).slice(2, 8);
      schemas.push(`bench_wh0_${tag}`, `bench_wh1_${tag}`);
      const pg0 = await seedPostgres(postgresUrl, `bench_wh0_${tag}`, SMALL);
      const pg1 = await seedPostgres(postgresUrl, `bench_wh1_${tag}`, SMALL);
      await registerWebhook(pg1.url, `${receiver.url}/hook`);
      const whPostgres = {
        plain: target(await start(startPlantstore('plantstore postgres, no webhook', pg0.url, log('pg-wh0'), hookedEnv)), 'create', pg0.token),
        hooked: target(await start(startPlantstore('plantstore postgres, 1 webhook', pg1.url, log('pg-wh1'), hookedEnv)), 'create', pg1.token),
      };
      const before = received;
      // The receiver counts across both backends: the PostgreSQL server's events are those after SQLite's.
      const offset = { received: before.received, unique: before.unique };
      const pgReceiver: Receiver = {
        ...receiver,
        stats: async () => {
          const now = await receiver.stats();
          return { received: now.received - offset.received, unique: now.unique - offset.unique };
        },
      };
      const pgRounds = await webhookScenario(s4, whPostgres.plain, whPostgres.hooked, pgReceiver);
      summaries.push(webhookSummary('postgres', pgRounds, whPostgres.hooked, await pgReceiver.stats()));
      rows4.push(
        { scenario: '4. (PostgreSQL)', target: whPostgres.plain },
        { scenario: '', target: whPostgres.hooked, reference: whPostgres.plain, referenceName: 'none', goal: 0.9 },
      );
      await whPostgres.plain.system.stop();
      await whPostgres.hooked.system.stop();
    }
    const printWebhooks = () => {
      printTable(rows4);
      console.log();
      for (const line of summaries) console.log(line);
    };
    if (only4) {
      console.log();
      printWebhooks();
      console.log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
      return;
    }

    const rows: Record<1 | 2 | 3, Row[]> = { 1: [], 2: [], 3: [] };
    const list = {
      bare: target(bare, 'list'),
      sqlite: target(sqliteSmall, 'list', smallToken),
      sqliteJwt: target(sqliteJwt, 'list', jwks.token),
      sqliteNoCache: target(sqliteSmallNoCache, 'list', smallToken),
      postgres: postgresSmall && pgSmall ? target(postgresSmall, 'list', pgSmall.token) : undefined,
      json: target(jsonServer, 'list', undefined, '/plants?_limit=20'),
    };
    const baselineList = [
      ...(baselineSqlite ? [target(baselineSqlite, 'list', smallToken)] : []),
      ...(baselinePostgres && pgSmall ? [target(baselinePostgres, 'list', pgSmall.token)] : []),
    ];
    const listMetrics = [metricsRows.list.sqlite, ...(metricsRows.list.postgres ? [metricsRows.list.postgres] : [])];
    await scenario(s1, [list.bare, list.sqlite, list.sqliteJwt, ...listMetrics, list.sqliteNoCache, ...(list.postgres ? [list.postgres] : []), ...baselineList, list.json]);
    const vsBare = (t: Target): Row => ({ scenario: '', target: t, reference: list.bare, referenceName: 'bare' });
    rows[1].push(
      { scenario: s1, target: list.bare },
      { scenario: '', target: list.sqlite, reference: list.bare, referenceName: 'bare', goal: 0.5 },
      { scenario: '', target: list.sqliteJwt, reference: list.sqlite, referenceName: 'opaque', goal: 0.95 },
      ...vsOff(metricsRows.list.sqlite, list.sqlite),
      vsBare(list.sqliteNoCache),
      ...(list.postgres ? [vsBare(list.postgres)] : []),
      ...vsOff(metricsRows.list.postgres, list.postgres),
      ...baselineList.map(vsBare),
      vsBare(list.json),
    );

    // Scenario 3 compares store sizes with processes of the same history: all started fresh here (a
    // process that served scenario 1 for minutes is warmer than one that has not), with the cache on
    // and off, the latter showing that the indexes keep a query's cost flat as the store grows.
    await sqliteSmallNoCache.stop();
    await sqliteJwt.stop();
    await jwks.stop();
    const s3Systems = {
      small: await start(startPlantstore('plantstore sqlite 10k', `sqlite:${small}.s3`, log('s3-small'))),
      large: await start(startPlantstore('plantstore sqlite 1M', `sqlite:${large}`, log('s3-large'))),
      smallNoCache: await start(startPlantstore('plantstore sqlite 10k, no cache', `sqlite:${small}.s3-nocache`, log('s3-small-nc'), noCache)),
      largeNoCache: await start(startPlantstore('plantstore sqlite 1M, no cache', `sqlite:${large}.nocache`, log('s3-large-nc'), noCache)),
      pgSmall: pgSmall && (await start(startPlantstore('plantstore postgres 10k', pgSmall.url, log('s3-pg-small')))),
      pgLarge: pgLarge && (await start(startPlantstore('plantstore postgres 1M', pgLarge.url, log('s3-pg-large')))),
    };
    const s3 = '3. the same on 1M plants';
    const scale = {
      small: target(s3Systems.small, 'list', smallToken),
      large: target(s3Systems.large, 'list', largeToken),
      smallNoCache: target(s3Systems.smallNoCache, 'list', smallToken),
      largeNoCache: target(s3Systems.largeNoCache, 'list', largeToken),
      pgSmall: s3Systems.pgSmall && pgSmall ? target(s3Systems.pgSmall, 'list', pgSmall.token) : undefined,
      pgLarge: s3Systems.pgLarge && pgLarge ? target(s3Systems.pgLarge, 'list', pgLarge.token) : undefined,
    };
    await scenario(s3, [
      scale.small, scale.large, scale.smallNoCache, scale.largeNoCache,
      ...(scale.pgSmall && scale.pgLarge ? [scale.pgSmall, scale.pgLarge] : []),
    ]);
    rows[3].push(
      { scenario: s3, target: scale.small },
      { scenario: '', target: scale.large, reference: scale.small, referenceName: '10k', goal: 0.8 },
      { scenario: '', target: scale.smallNoCache },
      { scenario: '', target: scale.largeNoCache, reference: scale.smallNoCache, referenceName: '10k', goal: 0.8 },
      ...(scale.pgSmall && scale.pgLarge
        ? [{ scenario: '', target: scale.pgSmall }, { scenario: '', target: scale.pgLarge, reference: scale.pgSmall, referenceName: '10k' }]
        : []),
    );
    for (const system of Object.values(s3Systems)) await system?.stop(); // less competition for the CPU

    const create = {
      bare: target(bare, 'create'),
      sqlite: target(sqliteSmall, 'create', smallToken),
      postgres: postgresSmall && pgSmall ? target(postgresSmall, 'create', pgSmall.token) : undefined,
      json: target(jsonServer, 'create'),
    };
    const baselineCreate = {
      sqlite: baselineSqlite ? target(baselineSqlite, 'create', smallToken) : undefined,
      postgres: baselinePostgres && pgSmall ? target(baselinePostgres, 'create', pgSmall.token) : undefined,
    };
    const baselineCreates = [baselineCreate.sqlite, baselineCreate.postgres].filter((t): t is Target => t !== undefined);
    const createMetrics = [metricsRows.create.sqlite, ...(metricsRows.create.postgres ? [metricsRows.create.postgres] : [])];
    await scenario(s2, [create.bare, create.sqlite, ...createMetrics, ...(create.postgres ? [create.postgres] : []), ...baselineCreates, create.json]);
    const createVsBare = (t: Target): Row => ({ scenario: '', target: t, reference: create.bare, referenceName: 'bare' });
    rows[2].push(
      { scenario: s2, target: create.bare },
      { scenario: '', target: create.sqlite, reference: create.bare, referenceName: 'bare', goal: 0.4 },
      ...vsOff(metricsRows.create.sqlite, create.sqlite),
      ...(create.postgres ? [createVsBare(create.postgres)] : []),
      ...vsOff(metricsRows.create.postgres, create.postgres),
      ...baselineCreates.map(createVsBare),
      createVsBare(create.json),
    );

    console.log();
    printTable([...rows[1], ...rows[2], ...rows[3]]);
    console.log();
    printWebhooks();
    console.log();
    for (const line of scrapeSummary()) console.log(line);
    const checks: Array<[string, Target, string]> = [['sqlite', create.sqlite, `sqlite:${small}`]];
    if (create.postgres && pgSmall) checks.push(['postgres', create.postgres, pgSmall.url]);
    checks.push(['sqlite, metrics on', metricsRows.create.sqlite, `sqlite:${small}.metrics`]);
    if (metricsRows.create.postgres && pgSmall) checks.push(['postgres, metrics on', metricsRows.create.postgres, pgSmall.url]);
    if (baselineCreate.sqlite) checks.push(['baseline sqlite', baselineCreate.sqlite, `sqlite:${small}.baseline`]);
    if (baselineCreate.postgres && pgSmall) checks.push(['baseline postgres', baselineCreate.postgres, pgSmall.url]);
    for (const [name, t, url] of checks) {
      const stored = await countStored(url, t.acknowledged);
      const answered = t.acknowledged.length;
      console.log(`durability (${name}): ${answered.toLocaleString('en-US')} creates answered 200; ` +
        (stored === answered ? 'every one of them is in the store' : `only ${stored.toLocaleString('en-US')} of them are in the store: FAILED`));
    }
    console.log(`stores: ${SMALL.toLocaleString('en-US')} and ${LARGE.toLocaleString('en-US')} plants across ${USERS} users; ` +
      `the listing user (${BENCH_USER}) owns 1/${USERS} of them.${postgresUrl ? '' : ' PostgreSQL: not run (pass --postgres URL or DATABASE_URL=postgres://…).'}`);
    console.log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    for (const s of systems) await s.stop();
    if (postgresUrl) for (const schema of schemas) await dropPostgresSchema(postgresUrl, schema);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
