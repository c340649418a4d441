// npm run bench [-- --postgres postgres://…] [--rounds 3] [--duration 8] [--baseline DIR] [--profile DIR] [--keep]
//                 [--only list,create,scale,mix,webhooks,jwt,metrics] [--mix-only] [--webhooks-only] [--jwt-only] [--metrics-only]
//
// Loads each system on loopback with wrk and prints one table: requests/s, p50 and p99 latency, the
// server's CPU time per request (and PostgreSQL's, for PostgreSQL rows), the ratio to the reference, and
// plantstore's peak RSS. --baseline DIR adds the plantstore build of another checkout (its
// bin/plantstore.js, built) to scenarios 1, 2 and the mix, in the same rounds: a before/after comparison
// that machine noise between runs cannot blur. Systems take turns (A B A B …) and each number is the
// median of the rounds, because these machines are shared and noisy. Never part of npm test.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { dbCpuSince, dbCpuSnapshot, findPostmaster } from './lib/db-cpu.js';
import {
  collectPages, countPages, CREATE_SHARE, FIRST_PAGE_SHARE, MIX_FIRST_ID, MIX_IDS_PER_LOAD, MIX_PLANTS, MIX_USERS, mixOwnerOf, mixScript, mixUser,
  PAGE, seedMixPostgres, seedMixSqlite, TAG_SHARE, writeMixData,
} from './lib/mix.js';
import {
  BENCH_USER, dropPostgresSchema, registerWebhook, seedPostgres, seedSqlite, UNUSED_WEBHOOK_URL, USERS, WEBHOOK_OWNER, writeJsonServerDb,
} from './lib/seed.js';
import {
  freePort, peakRssMb, profilePlantstore, resetPeakRss, startBare, startJsonServer, startJwks, startPlantstore, startReceiver, type System,
} from './lib/systems.js';
import { cpuMicros, ensureWrk, wrk } from './lib/wrk.js';

const { values: args } = parseArgs({
  options: {
    postgres: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    baseline: { type: 'string' },
    // The plantstore servers run with --cpu-prof, their profiles written into DIR as they stop.
    profile: { type: 'string' },
    // Keeps the work folder (each server's log, the SQLite stores) and the PostgreSQL schemas, and says
    // where they are, to look into a run afterwards (which attempts a delivery took, what was logged).
    keep: { type: 'boolean', default: false },
    // A comma-separated subset of SCENARIOS; the -only flags below are its one-name aliases.
    only: { type: 'string' },
    'mix-only': { type: 'boolean', default: false },
    'webhooks-only': { type: 'boolean', default: false },
    'jwt-only': { type: 'boolean', default: false },
    'metrics-only': { type: 'boolean', default: false },
  },
});
/**
 * list: scenario 1 (its JWT row included); create: 2; scale: 3 (1M plants); webhooks: 4; mix: 5, the
 * realistic mix. Two more, never in the default set: jwt, scenario 1's opaque and JWT rows only; metrics,
 * scenarios 1 and 2 with metrics off and on only.
 */
const SCENARIOS = ['list', 'create', 'scale', 'webhooks', 'mix', 'jwt', 'metrics'] as const;
type ScenarioName = (typeof SCENARIOS)[number];
const selected = new Set<ScenarioName>();
for (const name of args.only?.split(',').map((n) => n.trim()).filter(Boolean) ?? []) {
  if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`--only: unknown scenario "${name}"; scenarios are ${SCENARIOS.join(', ')}`);
  selected.add(name as ScenarioName);
}
if (args['mix-only']) selected.add('mix');
if (args['webhooks-only']) selected.add('webhooks');
if (args['jwt-only']) selected.add('jwt');
if (args['metrics-only']) selected.add('metrics');
if (selected.size === 0) for (const name of ['list', 'create', 'scale', 'webhooks', 'mix'] as const) selected.add(name);
const run = (name: ScenarioName) => selected.has(name);

const ROUNDS = Number(args.rounds);
const DURATION_S = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const WARMUP_S = 2;
const SMALL = 10_000;
const LARGE = 1_000_000;
const postgresUrl = args.postgres ?? (process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined);

/** The p99 latency every row with a ratio goal must stay under. */
const P99_GOAL_MS = 10;

type Kind = 'list' | 'create' | 'mix';
interface Target {
  readonly system: System;
  readonly kind: Kind;
  /** Path and headers of the request; creates get a unique id each. The mix: its script's data file instead. */
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The ids of creates answered 2xx, to check afterwards that each one was stored. */
  readonly acknowledged: number[];
  readonly results: Array<{ rps: number; p50: number; p99: number; errors: number; cpuUs: number; dbCpuUs: number | undefined }>;
  rssMb?: number;
  /** A server with metrics on: scraped every SCRAPE_INTERVAL_MS while it is loaded, as Prometheus would. */
  readonly scrape?: Scraper | undefined;
  /** A PostgreSQL server's rows: the postmaster whose processes' CPU is counted too. */
  readonly postmaster?: number | undefined;
}

/**
 * Prometheus scrapes every 15 s by default; the bench scrapes three times as often (and once as a load
 * starts), only while that server is loaded, so the scrapes cost that server and never the others.
 */
const SCRAPE_INTERVAL_MS = 5000;

interface Scraper {
  readonly url: string;
  /** Which server, where several rows share a name (its log file's name). */
  readonly label?: string;
  scrapes: number;
  failures: number;
  bytes: number;
  /** The list cache's lookups since the server started, as the last scrape counted them. */
  cacheHits?: number | undefined;
  cacheMisses?: number | undefined;
}

/** A counter's value in a Prometheus text exposition, or undefined. */
function counter(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

function scrapeDuring(scraper: Scraper | undefined): () => void {
  if (scraper === undefined) return () => undefined;
  const once = (): void => {
    fetch(scraper.url).then(async (res) => {
      const text = await res.text();
      scraper.scrapes++;
      scraper.bytes = text.length;
      if (res.status !== 200 || !text.includes('plantstore_http_requests_total')) scraper.failures++;
      scraper.cacheHits = counter(text, 'plantstore_list_cache_hits_total');
      scraper.cacheMisses = counter(text, 'plantstore_list_cache_misses_total');
    }, () => scraper.failures++);
  };
  once();
  const timer = setInterval(once, SCRAPE_INTERVAL_MS);
  return () => clearInterval(timer);
}

let nextId = 1_000_000_000_000;
let nextMixId = MIX_FIRST_ID;

async function load(target: Target, seconds: number, warmup = false): Promise<void> {
  const mix = target.kind === 'mix';
  const firstId = mix ? nextMixId : nextId;
  // Far more ids than one load can use, so ids stay unique across loads.
  if (target.kind === 'create') nextId += 100_000_000;
  if (mix) nextMixId += MIX_IDS_PER_LOAD;
  const cpuBefore = cpuMicros(target.system.pid);
  const dbBefore = target.postmaster === undefined ? undefined : dbCpuSnapshot(target.postmaster);
  const stopScraping = scrapeDuring(target.scrape);
  const result = await wrk({
    url: target.system.url,
    method: target.kind === 'list' ? 'GET' : 'POST',
    path: target.path,
    headers: target.kind === 'list' ? target.headers : { ...target.headers, 'content-type': 'application/json' },
    connections: CONNECTIONS,
    seconds,
    firstId,
    ...(mix ? { script: (out: string) => mixScript(target.path, out, firstId, firstId / MIX_IDS_PER_LOAD) } : {}),
  }).finally(stopScraping);
  const requests = Math.max(1, result.requests);
  const cpuUs = (cpuMicros(target.system.pid) - cpuBefore) / requests;
  const dbCpuUs = target.postmaster === undefined || dbBefore === undefined ? undefined : dbCpuSince(target.postmaster, dbBefore) / requests;
  // A loop: spreading hundreds of thousands of ids as arguments overflows the stack.
  for (const id of result.acknowledged) target.acknowledged.push(id);
  if (warmup) return;
  target.results.push({ rps: result.rps, p50: result.p50, p99: result.p99, errors: result.errors, cpuUs, dbCpuUs });
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
  dbCpuUs: t.postmaster === undefined ? undefined : median(t.results.map((r) => r.dbCpuUs ?? NaN)),
});

interface Row {
  scenario: string;
  target: Target;
  reference?: Target;
  referenceName?: string;
  goal?: number;
  /** The rows held to a latency goal as well: p99 ≤ P99_GOAL_MS too, shown in the target cell. */
  p99Goal?: boolean;
}

function printTable(rows: Row[]): void {
  const header = ['scenario', 'system', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'DB CPU µs/req', 'ratio', 'target', 'peak RSS', 'non-2xx'];
  const lines = rows.map(({ scenario: s, target, reference, referenceName, goal, p99Goal }) => {
    const m = stat(target);
    const ratio = reference ? m.rps / stat(reference).rps : undefined;
    const goals = [
      ...(goal === undefined || ratio === undefined ? [] : [`≥ ${goal} ${ratio >= goal ? 'met' : 'MISSED'}`]),
      ...(p99Goal ? [`p99 ≤ ${P99_GOAL_MS} ${m.p99 <= P99_GOAL_MS ? 'met' : 'MISSED'}`] : []),
    ];
    return [
      s,
      target.system.name,
      Math.round(m.rps).toLocaleString('en-US'),
      m.p50.toFixed(1),
      m.p99.toFixed(1),
      m.cpuUs.toFixed(0),
      m.dbCpuUs === undefined ? '' : m.dbCpuUs.toFixed(0),
      ratio === undefined ? '' : `${ratio.toFixed(2)}× ${referenceName}`,
      goals.join(', '),
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

/** How many of `ids` the store holds, each for its owner (the bench user, or the mix's user read from the id). */
async function countStored(databaseUrl: string, ids: number[], ownerOf: (id: number) => string = () => BENCH_USER): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: Database } = await import('../src/store/sqlite/driver.js');
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    const has = db.prepare('SELECT 1 FROM plants WHERE owner = ? AND id = ?').pluck();
    const n = ids.filter((id) => has.get(ownerOf(id), id) !== undefined).length;
    db.close();
    return n;
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const res = await client
    .query(
      `SELECT count(*)::int AS n FROM unnest($1::text[], $2::bigint[]) AS a(owner, id)
       WHERE EXISTS (SELECT 1 FROM plants p WHERE p.owner = a.owner AND p.id = a.id)`,
      [ids.map(ownerOf), ids],
    )
    .finally(() => client.end());
  return res.rows[0].n;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-bench-'));
  const started = Date.now();
  const systems: System[] = [];
  const schemas: string[] = [];
  const finished = () => console.log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
  try {
    ensureWrk();
    if (args.profile !== undefined) profilePlantstore(args.profile);
    const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
    console.log(`plantstore bench, ${new Date().toISOString().slice(0, 10)}: ${availableParallelism()} cores (${cpu}), Node ${process.version}, ` +
      `load generator wrk (1 thread) on the same machine, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${DURATION_S} s each, medians; ` +
      `scenarios: ${[...selected].join(', ')}`);
    const start = async <T extends System>(s: Promise<T>) => {
      const system = await s;
      systems.push(system);
      return system;
    };
    const log = (name: string) => join(dir, `${name}.log`);
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    const headersOf = (r: Response) => ({ 'content-type': r.headers.get('content-type') ?? '', ...(r.headers.get('link') ? { link: r.headers.get('link') as string } : {}) });
    const postmaster = postgresUrl ? await findPostmaster(postgresUrl).catch(() => undefined) : undefined;
    if (postgresUrl && postmaster === undefined) process.stderr.write('PostgreSQL\'s processes are not visible here: no DB CPU column\n');

    // Servers of scenarios 1, 2 and the mix run as production would with the features on: metrics
    // (METRICS_PORT, scraped while loaded) and one webhook endpoint in the store, another user's (see
    // WEBHOOK_OWNER). pgSystems: PostgreSQL servers, whose rows count PostgreSQL's CPU too.
    const scrapers = new Map<System, Scraper>();
    const pgSystems = new Set<System>();
    const startServer = async (name: string, databaseUrl: string, file: string, env: NodeJS.ProcessEnv = {}, checkout?: string, metrics = false) => {
      const port = metrics ? await freePort() : undefined;
      const system = await start(startPlantstore(name, databaseUrl, log(file), { ...env, ...(port === undefined ? {} : { METRICS_PORT: String(port) }) }, checkout));
      if (port !== undefined) scrapers.set(system, { url: `http://127.0.0.1:${port}/metrics`, scrapes: 0, failures: 0, bytes: 0, label: file });
      if (databaseUrl.startsWith('postgres')) pgSystems.add(system);
      return system;
    };
    const featured = (name: string, databaseUrl: string, file: string, env: NodeJS.ProcessEnv = {}, checkout?: string) =>
      startServer(name, databaseUrl, file, env, checkout, true);
    const listPath = `/plants?limit=${PAGE}`;
    const target = (system: System, kind: Kind, token?: string, path = kind === 'list' ? listPath : '/plants'): Target => ({
      system, kind, path, headers: token ? auth(token) : {}, acknowledged: [], results: [],
      scrape: scrapers.get(system), postmaster: pgSystems.has(system) ? postmaster : undefined,
    });
    const present = (...ts: Array<Target | undefined>) => ts.filter((t): t is Target => t !== undefined);
    const vsOff = (t: Target | undefined, off: Target | undefined): Row[] =>
      (t && off ? [{ scenario: '', target: t, reference: off, referenceName: 'off', goal: 0.95 }] : []);
    const baseline = args.baseline;

    process.stderr.write('seeding stores…\n');
    const small = join(dir, 'small.db');
    const large = join(dir, 'large.db');
    const needSmall = ['list', 'create', 'scale', 'webhooks', 'jwt', 'metrics'].some((n) => run(n as ScenarioName));
    const smallToken = needSmall ? await seedSqlite(small, SMALL) : '';
    const largeToken = run('scale') ? await seedSqlite(large, LARGE) : '';
    if (needSmall) {
      // Copies before the other user's endpoint: scenario 3 as it was, scenario 4's pair with none.
      for (const copy of ['s3', 's3-nocache', 'wh0', 'wh1']) copyFileSync(small, `${small}.${copy}`);
      await registerWebhook(`sqlite:${small}`, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
      // One server per SQLite store: every other server gets a copy (same plants, same token).
      for (const copy of ['nocache', 'baseline', 'jwt', 'metrics']) copyFileSync(small, `${small}.${copy}`);
    }
    if (run('scale')) copyFileSync(large, `${large}.nocache`);
    if (run('list') || run('create')) writeJsonServerDb(join(dir, 'json-server.json'), SMALL);
    let pgSmall: { url: string; token: string } | undefined;
    let pgLarge: { url: string; token: string } | undefined;
    if (postgresUrl && ['list', 'create', 'scale', 'metrics'].some((n) => run(n as ScenarioName))) {
      const tag = Math.random().toString(16).slice(2, 8);
      schemas.push(`bench_small_${tag}`, `bench_large_${tag}`);
      pgSmall = await seedPostgres(postgresUrl, `bench_small_${tag}`, SMALL);
      await registerWebhook(pgSmall.url, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
      if (run('scale')) pgLarge = await seedPostgres(postgresUrl, `bench_large_${tag}`, LARGE);
    }

    const rows: Row[] = [];
    const durability: Array<[string, Target, string, ((id: number) => string)?]> = [];
    const summaries: string[] = [];
    const s1 = '1. GET /plants?limit=20, 10k plants';
    const s2 = '2. POST /plants, unique ids, durable';

    // Scenario 4 first, on processes of its own: webhooks. Each pair of servers has stores of its own
    // (copies of the small store; fresh PostgreSQL schemas), the second with one endpoint registered.
    const rows4: Row[] = [];
    const webhookSummaries: string[] = [];
    if (run('webhooks')) {
      const receiver = await start(startReceiver());
      const s4 = '4. POST /plants, one webhook endpoint vs none';
      const hookedEnv = { WEBHOOK_ALLOW_PRIVATE: 'on' };
      await registerWebhook(`sqlite:${small}.wh1`, `${receiver.url}/hook`);
      const whSqlite = {
        plain: target(await startServer('plantstore sqlite, no webhook', `sqlite:${small}.wh0`, 'wh0', hookedEnv), 'create', smallToken),
        hooked: target(await startServer('plantstore sqlite, 1 webhook', `sqlite:${small}.wh1`, 'wh1', hookedEnv), 'create', smallToken),
      };
      let received = { received: 0, unique: 0 };
      const sqliteRounds = await webhookScenario(s4, whSqlite.plain, whSqlite.hooked, receiver);
      received = await receiver.stats();
      webhookSummaries.push(webhookSummary('sqlite', sqliteRounds, whSqlite.hooked, received));
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
          plain: target(await startServer('plantstore postgres, no webhook', pg0.url, 'pg-wh0', hookedEnv), 'create', pg0.token),
          hooked: target(await startServer('plantstore postgres, 1 webhook', pg1.url, 'pg-wh1', hookedEnv), 'create', pg1.token),
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
        webhookSummaries.push(webhookSummary('postgres', pgRounds, whPostgres.hooked, await pgReceiver.stats()));
        rows4.push(
          { scenario: '4. (PostgreSQL)', target: whPostgres.plain },
          { scenario: '', target: whPostgres.hooked, reference: whPostgres.plain, referenceName: 'none', goal: 0.9 },
        );
        await whPostgres.plain.system.stop();
        await whPostgres.hooked.system.stop();
      }
      await receiver.stop();
    }

    // The servers of scenarios 1 and 2, started when either runs.
    const s12 = run('list') || run('create') || run('jwt') || run('metrics');
    const sqliteSmall = s12 ? await featured('plantstore sqlite', `sqlite:${small}`, 'sqlite-small') : undefined;
    const postgresSmall = s12 && pgSmall ? await featured('plantstore postgres', pgSmall.url, 'pg-small') : undefined;
    const baselineSqlite = s12 && baseline !== undefined && (run('list') || run('create'))
      ? await featured('baseline sqlite', `sqlite:${small}.baseline`, 'baseline-sqlite', {}, baseline) : undefined;
    // The same schema as the row above: instances of any version may share a PostgreSQL database.
    const baselinePostgres = baselineSqlite && pgSmall ? await featured('baseline postgres', pgSmall.url, 'baseline-pg', {}, baseline) : undefined;
    let bare: System | undefined;
    if (sqliteSmall) {
      // The bare server answers the very bytes plantstore answers, so only the work behind them differs.
      const listed = await fetch(`${sqliteSmall.url}${listPath}`, { headers: auth(smallToken) });
      const created = await fetch(`${sqliteSmall.url}/plants`, {
        method: 'POST',
        headers: { ...auth(smallToken), 'content-type': 'application/json' },
        body: JSON.stringify({ id: nextId - 1, name: 'bench plant' }), // below the counted range
      });
      bare = await start(startBare({
        list: { body: await listed.text(), headers: headersOf(listed) },
        create: { body: await created.text(), headers: headersOf(created) },
      }));
    }

    if (sqliteSmall && (run('list') || run('jwt'))) {
      // The same list with a JWT from an identity provider (bench/servers/jwks-server.mjs), on a server that
      // accepts both kinds of token: after the first request, a verified JWT costs a map lookup.
      const jwks = await start(startJwks(BENCH_USER, 'plantstore-bench'));
      const sqliteJwt = await featured('plantstore sqlite, JWT', `sqlite:${small}.jwt`, 'sqlite-jwt',
        { JWT_JWKS_URL: jwks.jwksUrl, JWT_AUDIENCE: 'plantstore-bench' });
      const jwtListed = await fetch(`${sqliteJwt.url}${listPath}`, { headers: auth(jwks.token) });
      if (jwtListed.status !== 200 || (await jwtListed.text()) !== (await (await fetch(`${sqliteSmall.url}${listPath}`, { headers: auth(smallToken) })).text())) {
        throw new Error(`the JWT list does not answer what the opaque-token list does (${jwtListed.status})`);
      }
      if (run('list') && bare) {
        // The same store with the page cache off: the cost of a query per request.
        const sqliteSmallNoCache = await featured('plantstore sqlite, no cache', `sqlite:${small}.nocache`, 'sqlite-small-nc', { LIST_CACHE_PLANTS: '0' });
        const jsonServer = await start(startJsonServer(join(dir, 'json-server.json')));
        const list = {
          bare: target(bare, 'list'),
          sqlite: target(sqliteSmall, 'list', smallToken),
          sqliteJwt: target(sqliteJwt, 'list', jwks.token),
          sqliteNoCache: target(sqliteSmallNoCache, 'list', smallToken),
          postgres: postgresSmall && pgSmall ? target(postgresSmall, 'list', pgSmall.token) : undefined,
          json: target(jsonServer, 'list', undefined, '/plants?_limit=20'),
        };
        const baselineList = present(baselineSqlite && target(baselineSqlite, 'list', smallToken), baselinePostgres && pgSmall && target(baselinePostgres, 'list', pgSmall.token));
        await scenario(s1, present(list.bare, list.sqlite, list.sqliteJwt, list.sqliteNoCache, list.postgres, ...baselineList, list.json));
        const vsBare = (t: Target): Row => ({ scenario: '', target: t, reference: list.bare, referenceName: 'bare' });
        rows.push(
          { scenario: s1, target: list.bare },
          { ...vsBare(list.sqlite), goal: 0.6, p99Goal: true },
          { scenario: '', target: list.sqliteJwt, reference: list.sqlite, referenceName: 'opaque', goal: 0.95 },
          vsBare(list.sqliteNoCache),
          ...(list.postgres ? [{ ...vsBare(list.postgres), goal: 0.3, p99Goal: true }] : []),
          ...baselineList.map(vsBare),
          vsBare(list.json),
        );
        await sqliteSmallNoCache.stop();
        await jsonServer.stop();
      } else {
        const opaque = target(sqliteSmall, 'list', smallToken);
        const jwt = target(sqliteJwt, 'list', jwks.token);
        await scenario(s1, [opaque, jwt]);
        rows.push({ scenario: s1, target: opaque }, { scenario: '', target: jwt, reference: opaque, referenceName: 'opaque', goal: 0.95 });
      }
      await sqliteJwt.stop();
      await jwks.stop();
    }

    if (sqliteSmall && run('metrics')) {
      // The rows above have metrics on; the same servers with metrics off, against them.
      // PostgreSQL's shares the schema, as the baseline's does.
      const sqliteOff = await startServer('plantstore sqlite, metrics off', `sqlite:${small}.metrics`, 'sqlite-metrics-off');
      const postgresOff = pgSmall ? await startServer('plantstore postgres, metrics off', pgSmall.url, 'pg-metrics-off') : undefined;
      const pair = (kind: Kind) => ({
        sqlite: { off: target(sqliteOff, kind, smallToken), on: target(sqliteSmall, kind, smallToken) },
        postgres: postgresOff && postgresSmall && pgSmall
          ? { off: target(postgresOff, kind, pgSmall.token), on: target(postgresSmall, kind, pgSmall.token) } : undefined,
      });
      const m1 = pair('list');
      const m2 = pair('create');
      await scenario(`${s1} (metrics off and on)`, present(m1.sqlite.off, m1.sqlite.on, m1.postgres?.off, m1.postgres?.on));
      await scenario(`${s2} (metrics off and on)`, present(m2.sqlite.off, m2.sqlite.on, m2.postgres?.off, m2.postgres?.on));
      rows.push(
        { scenario: `${s1}, metrics off/on`, target: m1.sqlite.off }, ...vsOff(m1.sqlite.on, m1.sqlite.off),
        ...(m1.postgres ? [{ scenario: '', target: m1.postgres.off }, ...vsOff(m1.postgres.on, m1.postgres.off)] : []),
        { scenario: `${s2}, metrics off/on`, target: m2.sqlite.off }, ...vsOff(m2.sqlite.on, m2.sqlite.off),
        ...(m2.postgres ? [{ scenario: '', target: m2.postgres.off }, ...vsOff(m2.postgres.on, m2.postgres.off)] : []),
      );
      durability.push(['sqlite, metrics off', m2.sqlite.off, `sqlite:${small}.metrics`], ['sqlite, metrics on', m2.sqlite.on, `sqlite:${small}`]);
      if (m2.postgres && pgSmall) durability.push(['postgres, metrics off', m2.postgres.off, pgSmall.url], ['postgres, metrics on', m2.postgres.on, pgSmall.url]);
      await sqliteOff.stop();
      await postgresOff?.stop();
    }

    if (run('scale')) {
      // Scenario 3 compares store sizes with processes of the same history: all started fresh here (a
      // process that served scenario 1 for minutes is warmer than one that has not), with the cache on
      // and off, the latter showing that the indexes keep a query's cost flat as the store grows. Default
      // settings: no metrics, no webhook endpoint (lists never touch either).
      const noCache = { LIST_CACHE_PLANTS: '0' };
      const s3Systems = {
        small: await startServer('plantstore sqlite 10k', `sqlite:${small}.s3`, 's3-small'),
        large: await startServer('plantstore sqlite 1M', `sqlite:${large}`, 's3-large'),
        smallNoCache: await startServer('plantstore sqlite 10k, no cache', `sqlite:${small}.s3-nocache`, 's3-small-nc', noCache),
        largeNoCache: await startServer('plantstore sqlite 1M, no cache', `sqlite:${large}.nocache`, 's3-large-nc', noCache),
        pgSmall: pgSmall && (await startServer('plantstore postgres 10k', pgSmall.url, 's3-pg-small')),
        pgLarge: pgLarge && (await startServer('plantstore postgres 1M', pgLarge.url, 's3-pg-large')),
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
      rows.push(
        { scenario: s3, target: scale.small },
        { scenario: '', target: scale.large, reference: scale.small, referenceName: '10k', goal: 0.8 },
        { scenario: '', target: scale.smallNoCache },
        { scenario: '', target: scale.largeNoCache, reference: scale.smallNoCache, referenceName: '10k', goal: 0.8 },
        ...(scale.pgSmall && scale.pgLarge
          ? [{ scenario: '', target: scale.pgSmall }, { scenario: '', target: scale.pgLarge, reference: scale.pgSmall, referenceName: '10k' }]
          : []),
      );
      for (const system of Object.values(s3Systems)) await system?.stop(); // less competition for the CPU
    }

    if (sqliteSmall && bare && run('create')) {
      const jsonServer = await start(startJsonServer(join(dir, 'json-server.json')));
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
      const baselineCreates = present(baselineCreate.sqlite, baselineCreate.postgres);
      await scenario(s2, present(create.bare, create.sqlite, create.postgres, ...baselineCreates, create.json));
      const vsBare = (t: Target): Row => ({ scenario: '', target: t, reference: create.bare, referenceName: 'bare' });
      rows.push(
        { scenario: s2, target: create.bare },
        { ...vsBare(create.sqlite), goal: 0.5, p99Goal: true },
        ...(create.postgres ? [{ ...vsBare(create.postgres), goal: 0.4, p99Goal: true }] : []),
        ...baselineCreates.map(vsBare),
        vsBare(create.json),
      );
      durability.push(['sqlite', create.sqlite, `sqlite:${small}`]);
      if (create.postgres && pgSmall) durability.push(['postgres', create.postgres, pgSmall.url]);
      if (baselineCreate.sqlite) durability.push(['baseline sqlite', baselineCreate.sqlite, `sqlite:${small}.baseline`]);
      if (baselineCreate.postgres && pgSmall) durability.push(['baseline postgres', baselineCreate.postgres, pgSmall.url]);
      await jsonServer.stop();
    }
    // Less competition for the CPU in the mix.
    for (const s of [sqliteSmall, postgresSmall, baselineSqlite, baselinePostgres, bare]) await s?.stop();

    if (run('mix')) {
      const s5 = `5. realistic mix: ${MIX_USERS.toLocaleString('en-US')} users, ${MIX_PLANTS.toLocaleString('en-US')} plants, ${CREATE_SHARE * 100}% creates`;
      process.stderr.write('seeding the mix…\n');
      const mixStarted = Date.now();
      const mixDb = join(dir, 'mix.db');
      const mixTokens = await seedMixSqlite(mixDb);
      await registerWebhook(`sqlite:${mixDb}`, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
      // The same plants, tokens and cursor key.
      for (const copy of [...(baseline === undefined ? [] : ['baseline']), 'jwt']) copyFileSync(mixDb, `${mixDb}.${copy}`);
      let pgMix: { url: string; tokens: string[] } | undefined;
      if (postgresUrl) {
        const schema = `bench_mix_${Math.random().toString(16).slice(2, 8)}`;
        schemas.push(schema);
        pgMix = await seedMixPostgres(postgresUrl, schema);
        await registerWebhook(pgMix.url, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
      }
      const sqliteMix = await featured('plantstore sqlite', `sqlite:${mixDb}`, 'mix-sqlite');
      const postgresMix = pgMix ? await featured('plantstore postgres', pgMix.url, 'mix-pg') : undefined;
      const baselineSqliteMix = baseline === undefined ? undefined
        : await featured('baseline sqlite', `sqlite:${mixDb}.baseline`, 'mix-baseline-sqlite', {}, baseline);
      const baselinePostgresMix = baseline === undefined || !pgMix ? undefined
        : await featured('baseline postgres', pgMix.url, 'mix-baseline-pg', {}, baseline);
      // Real cursors, sealed with each store's key: collected once per store over HTTP (the baseline's
      // copy shares its store's key; instances on one PostgreSQL schema share theirs).
      process.stderr.write('collecting the mix\'s pages…\n');
      const sqlitePages = await collectPages(sqliteMix.url, mixTokens);
      const sqliteData = join(dir, 'mix-sqlite.tsv');
      writeMixData(sqliteData, sqlitePages);
      let pgData: string | undefined;
      if (postgresMix && pgMix) {
        pgData = join(dir, 'mix-pg.tsv');
        writeMixData(pgData, await collectPages(postgresMix.url, pgMix.tokens));
      }
      // The same with a JWT per user instead of an opaque token: the same cursors open, bound to the user.
      const mixJwks = await start(startJwks(mixUser(0), 'plantstore-bench', {
        users: Array.from({ length: MIX_USERS }, (_, i) => mixUser(i)), file: join(dir, 'mix-jwts.txt'),
      }));
      const jwtMix = await featured('plantstore sqlite, JWT', `sqlite:${mixDb}.jwt`, 'mix-sqlite-jwt',
        { JWT_JWKS_URL: mixJwks.jwksUrl, JWT_AUDIENCE: 'plantstore-bench' });
      const jwtData = join(dir, 'mix-jwt.tsv');
      writeMixData(jwtData, sqlitePages.map((u, i) => ({ ...u, token: mixJwks.tokens[i] as string })));
      // Every server walks the same pages before the load, so that page caches start alike; the walk
      // over the JWT server also shows that the same pages are there for JWTs.
      const walkedJwt = countPages(await collectPages(jwtMix.url, mixJwks.tokens));
      if (walkedJwt !== countPages(sqlitePages)) throw new Error(`the mix's JWT server has ${walkedJwt} pages, the opaque one ${countPages(sqlitePages)}`);
      // A baseline walks its own pages too, and is loaded with the cursors it sealed: another release may
      // seal cursors in another form (version 2 cursors are not opened by earlier releases).
      const baselineData = async (system: System | undefined, tokens: readonly string[], file: string): Promise<string | undefined> => {
        if (system === undefined) return undefined;
        const pages = await collectPages(system.url, tokens);
        if (countPages(pages) !== countPages(sqlitePages)) throw new Error(`${system.name} has ${countPages(pages)} pages of the mix, not ${countPages(sqlitePages)}`);
        writeMixData(join(dir, file), pages);
        return join(dir, file);
      };
      const baselineSqliteData = await baselineData(baselineSqliteMix, mixTokens, 'mix-baseline-sqlite.tsv');
      const baselinePgData = pgMix ? await baselineData(baselinePostgresMix, pgMix.tokens, 'mix-baseline-pg.tsv') : undefined;
      process.stderr.write(`mix ready in ${Math.round((Date.now() - mixStarted) / 1000)} s\n`);
      // The bare server answers the bytes of a typical page (a user's first: 20 plants and a next
      // link) to every GET, and a plant to every POST.
      const typical = sqlitePages.findIndex((u) => (u.groups[0]?.length ?? 0) > 1);
      const typicalToken = mixTokens[typical] as string;
      const listed = await fetch(`${sqliteMix.url}${listPath}`, { headers: auth(typicalToken) });
      const created = await fetch(`${sqliteMix.url}/plants`, {
        method: 'POST',
        headers: { ...auth(typicalToken), 'content-type': 'application/json' },
        body: JSON.stringify({ id: MIX_FIRST_ID - MIX_USERS + typical, name: 'bench plant' }), // below the counted range
      });
      const typicalPage = await listed.text();
      const jwtListed = await fetch(`${jwtMix.url}${listPath}`, { headers: auth(mixJwks.tokens[typical] as string) });
      if (jwtListed.status !== 200 || (await jwtListed.text()) !== typicalPage) {
        throw new Error(`the mix's JWT list does not answer what the opaque-token list does (${jwtListed.status})`);
      }
      const bareMix = await start(startBare({
        list: { body: typicalPage, headers: headersOf(listed) },
        create: { body: await created.text(), headers: headersOf(created) },
      }));
      const mixTarget = (system: System, data: string): Target => target(system, 'mix', undefined, data);
      const mix = {
        bare: mixTarget(bareMix, sqliteData),
        sqlite: mixTarget(sqliteMix, sqliteData),
        jwt: mixTarget(jwtMix, jwtData),
        postgres: postgresMix && pgData !== undefined ? mixTarget(postgresMix, pgData) : undefined,
        baselineSqlite: baselineSqliteMix && baselineSqliteData !== undefined ? mixTarget(baselineSqliteMix, baselineSqliteData) : undefined,
        baselinePostgres: baselinePostgresMix && baselinePgData !== undefined ? mixTarget(baselinePostgresMix, baselinePgData) : undefined,
      };
      await scenario(s5, present(mix.bare, mix.sqlite, mix.jwt, mix.postgres, mix.baselineSqlite, mix.baselinePostgres));
      const vsBare = (t: Target): Row => ({ scenario: '', target: t, reference: mix.bare, referenceName: 'bare' });
      rows.push(
        { scenario: s5, target: mix.bare },
        { ...vsBare(mix.sqlite), goal: 0.35, p99Goal: true },
        { scenario: '', target: mix.jwt, reference: mix.sqlite, referenceName: 'opaque', goal: 0.95 },
        ...present(mix.postgres, mix.baselineSqlite, mix.baselinePostgres).map(vsBare),
      );
      durability.push(['mix, sqlite', mix.sqlite, `sqlite:${mixDb}`, mixOwnerOf], ['mix, sqlite, JWT', mix.jwt, `sqlite:${mixDb}.jwt`, mixOwnerOf]);
      if (mix.postgres && pgMix) durability.push(['mix, postgres', mix.postgres, pgMix.url, mixOwnerOf]);
      if (mix.baselineSqlite) durability.push(['mix, baseline sqlite', mix.baselineSqlite, `sqlite:${mixDb}.baseline`, mixOwnerOf]);
      if (mix.baselinePostgres && pgMix) durability.push(['mix, baseline postgres', mix.baselinePostgres, pgMix.url, mixOwnerOf]);
      const walked = countPages(sqlitePages);
      summaries.push(`mix: each request a random user's (of ${MIX_USERS.toLocaleString('en-US')}, each with a token of its own and 20–200 plants); ` +
        `${CREATE_SHARE * 100}% creates; lists ${TAG_SHARE * 100}% with a tag filter, ${FIRST_PAGE_SHARE * 100}% the first page and the others ` +
        `a page further on, through ${(walked - sqlitePages.length * 4).toLocaleString('en-US')} cursors the server sealed (of ${walked.toLocaleString('en-US')} pages walked per store)`);
    }

    console.log();
    if (rows.length > 0) printTable(rows);
    if (rows4.length > 0) {
      if (rows.length > 0) console.log();
      printTable(rows4);
    }
    console.log();
    for (const line of webhookSummaries) console.log(line);
    for (const [system, scraper] of scrapers) {
      if (scraper.scrapes === 0) continue;
      console.log(`scrapes (${system.name}${scraper.label ? `, ${scraper.label}` : ''}): ${scraper.scrapes} every ${SCRAPE_INTERVAL_MS / 1000} s during its loads, ` +
        `${scraper.failures === 0 ? 'every one answered 200' : `${scraper.failures} FAILED`}, ${Math.round(scraper.bytes / 1024)} KB each` +
        (scraper.cacheHits === undefined || scraper.cacheMisses === undefined || scraper.cacheHits + scraper.cacheMisses === 0 ? '' :
          `; list cache ${(100 * scraper.cacheHits / (scraper.cacheHits + scraper.cacheMisses)).toFixed(0)}% hits since start`));
    }
    for (const line of summaries) console.log(line);
    for (const [name, t, url, ownerOf] of durability) {
      const stored = await countStored(url, t.acknowledged, ownerOf);
      const answered = t.acknowledged.length;
      console.log(`durability (${name}): ${answered.toLocaleString('en-US')} creates answered 200; ` +
        (stored === answered ? 'every one of them is in the store' : `only ${stored.toLocaleString('en-US')} of them are in the store: FAILED`));
    }
    if (needSmall) {
      console.log(`stores: ${SMALL.toLocaleString('en-US')}${run('scale') ? ` and ${LARGE.toLocaleString('en-US')}` : ''} plants across ${USERS} users; ` +
        `the listing user (${BENCH_USER}) owns 1/${USERS} of them.`);
    }
    console.log('rows of scenarios 1, 2 and 5 run with metrics on (scraped while loaded) and one webhook endpoint registered by another user; ' +
      'DB CPU: every PostgreSQL process\'s CPU over the load (backends and background workers; processes that exited during it are missed).' +
      `${postgresUrl ? '' : ' PostgreSQL: not run (pass --postgres URL or DATABASE_URL=postgres://…).'}`);
    if (args.profile !== undefined) {
      console.log(`CPU profiles in ${args.profile}, named CPU.<date>.<time>.<pid>.…cpuprofile: ` +
        systems.filter((s) => s.name.includes('plantstore') || s.name.includes('baseline')).map((s) => `${s.name} ${s.pid}`).join('; '));
    }
    finished();
  } finally {
    for (const s of systems) await s.stop();
    if (args.keep) {
      console.log(`kept: ${dir} (server logs, stores)${schemas.length > 0 ? `; PostgreSQL schemas ${schemas.join(', ')}` : ''}`);
    } else {
      if (postgresUrl) for (const schema of schemas) await dropPostgresSchema(postgresUrl, schema);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

await main();
