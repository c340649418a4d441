// npm run bench [-- --postgres postgres://…] [--rounds 3] [--duration 8] [--baseline DIR] [--profile DIR] [--keep]
//                 [--only list,create,scale,mix,webhooks,jwt,metrics,scale-out,feed] [--mix-only] [--webhooks-only] [--jwt-only] [--metrics-only]
//                 [--instances 1,2,4] [--pool-size N] [--subscribers 1000] [--feed-rate 50]
//
// Loads each system on loopback with wrk and prints one table: requests/s, p50 and p99 latency, the
// server's CPU time per request (and PostgreSQL's, for PostgreSQL rows), the ratio to the reference, and
// plantstore's peak RSS. --baseline DIR adds the plantstore build of another checkout (its
// bin/plantstore.js, built) to scenarios 1, 2 and the mix, in the same rounds: a before/after comparison
// that machine noise between runs cannot blur. Systems take turns (A B A B …) and each number is the
// median of the rounds, because these machines are shared and noisy. Never part of npm test.
//
// --only scale-out (PostgreSQL only) runs N plantstore instances on one database for each N of
// --instances, a wrk process each, against as many bare servers, and prints a table of its own: × one
// instance and efficiency. --pool-size is the instances' DATABASE_POOL_SIZE; PostgreSQL's max_connections
// is checked against it before anything starts.
//
// --only feed opens --subscribers streams to GET /plants/events on one server (a bare fan-out, SQLite,
// and PostgreSQL when it runs) and prints a table of its own: each event's time from its create's 200 to
// every stream, at --feed-rate paced creates a second, and wrk's create rate with the streams open and
// without them.
//
// This file is the runner: the flags, the scenarios and the order they run in, the rounds, the printed
// table and notes. Each scenario is a file of scenarios/; what they share is in lib/.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  Refusal, SCENARIO_NAMES, WARMUP_S, type Bench, type Kind, type Options, type Report, type Row, type ScenarioName, type Table, type Target,
} from './lib/bench.js';
import { findPostmaster } from './lib/db-cpu.js';
import { countStored } from './lib/durability.js';
import { startFleet } from './lib/fleet.js';
import { firstIds, load, loadTogether } from './lib/load.js';
import { auth, LIST_PATH } from './lib/requests.js';
import { parseInstances, parsePoolSize } from './lib/scale-out.js';
import { scrapeNote } from './lib/scrape.js';
import { DEFAULT_FEED_RATE, DEFAULT_SUBSCRIBERS, parseFeedRate, parseSubscribers } from './lib/feed.js';
import { dropPostgresSchema } from './lib/seed.js';
import { stat } from './lib/stats.js';
import { seedStores, storesNote, type Stores } from './lib/stores.js';
import { freePort, peakRssMb, profileFlags, resetPeakRss, startPlantstore, type System } from './lib/systems.js';
import { ensureWrk } from './lib/wrk.js';
import { create } from './scenarios/create.js';
import { feed } from './scenarios/feed.js';
import { jwt } from './scenarios/jwt.js';
import { list } from './scenarios/list.js';
import { metrics } from './scenarios/metrics.js';
import { mix } from './scenarios/mix.js';
import { scale } from './scenarios/scale.js';
import { checkConnections, scaleOut } from './scenarios/scale-out.js';
import { webhooks } from './scenarios/webhooks.js';

/**
 * list: scenario 1 (its JWT row included); create: 2; scale: 3 (1M plants); webhooks: 4; mix: 5, the
 * realistic mix. Three more, never in the default set: jwt, scenario 1's opaque and JWT rows only; metrics,
 * scenarios 1 and 2 with metrics off and on only; scale-out, several instances on one PostgreSQL database
 * (PostgreSQL only, and minutes more for each N: the default run keeps its length); feed, a thousand
 * streams of the live feed (three servers, three loads a round each: minutes more, and two file
 * descriptors a stream).
 */
const DEFAULT_SCENARIOS: readonly ScenarioName[] = ['list', 'create', 'scale', 'webhooks', 'mix'];

/** The p99 latency every row with a ratio goal must stay under. */
const P99_GOAL_MS = 10;

function parseOptions(): { options: Options; selected: Set<ScenarioName> } {
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
      // A comma-separated subset of the scenarios; the -only flags below are its one-name aliases.
      only: { type: 'string' },
      'mix-only': { type: 'boolean', default: false },
      'webhooks-only': { type: 'boolean', default: false },
      'jwt-only': { type: 'boolean', default: false },
      'metrics-only': { type: 'boolean', default: false },
      // The scale-out scenario's numbers of instances (1 is added if missing) and their DATABASE_POOL_SIZE.
      instances: { type: 'string', default: '1,2,4' },
      'pool-size': { type: 'string' },
      // The feed scenario's streams, and its paced creates a second.
      subscribers: { type: 'string', default: String(DEFAULT_SUBSCRIBERS) },
      'feed-rate': { type: 'string', default: String(DEFAULT_FEED_RATE) },
    },
  });
  const selected = new Set<ScenarioName>();
  for (const name of args.only?.split(',').map((n) => n.trim()).filter(Boolean) ?? []) {
    if (!(SCENARIO_NAMES as readonly string[]).includes(name)) throw new Refusal(`--only: unknown scenario "${name}"; scenarios are ${SCENARIO_NAMES.join(', ')}`);
    selected.add(name as ScenarioName);
  }
  for (const name of ['mix', 'webhooks', 'jwt', 'metrics'] as const) if (args[`${name}-only`]) selected.add(name);
  if (selected.size === 0) for (const name of DEFAULT_SCENARIOS) selected.add(name);
  const postgresUrl = args.postgres ?? (process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined);
  if (selected.has('scale-out') && postgresUrl === undefined) {
    throw new Refusal('--only scale-out runs on PostgreSQL only: pass --postgres postgres://… (or DATABASE_URL=postgres://…)');
  }
  const options: Options = {
    rounds: Number(args.rounds), durationS: Number(args.duration), connections: Number(args.connections),
    postgresUrl, baseline: args.baseline, profile: args.profile, keep: args.keep,
    instances: parseInstances(args.instances), poolSize: parsePoolSize(args['pool-size'], process.env.DATABASE_POOL_SIZE),
    subscribers: parseSubscribers(args.subscribers), feedRate: parseFeedRate(args['feed-rate']),
  };
  return { options, selected };
}

/**
 * The scenarios in the order they run. Webhooks first, on processes of their own. The fleet (the servers
 * of scenarios 1 and 2) serves list, jwt, metrics and create, and stops before scale-out and the mix,
 * which then have the CPU to themselves, as the feed has. jwt runs only without list, whose scenario has its rows.
 * Scale-out's connection check comes before any seeding, so that a run it would refuse stops at once.
 */
async function runScenarios(bench: Bench): Promise<Stores> {
  if (bench.has('scale-out')) await checkConnections(bench);
  const stores = await seedStores(bench);
  if (bench.has('webhooks')) await webhooks(bench, stores);
  const fleet = (['list', 'create', 'jwt', 'metrics'] as const).some((n) => bench.has(n)) ? await startFleet(bench, stores) : undefined;
  if (fleet && bench.has('list')) await list(bench, stores, fleet);
  else if (fleet && bench.has('jwt')) await jwt(bench, stores, fleet);
  if (fleet && bench.has('metrics')) await metrics(bench, stores, fleet);
  if (bench.has('scale')) await scale(bench, stores);
  if (fleet && bench.has('create')) await create(bench, stores, fleet);
  await fleet?.stop();
  if (bench.has('feed')) await feed(bench, stores);
  if (bench.has('scale-out')) await scaleOut(bench, stores);
  if (bench.has('mix')) await mix(bench);
  return stores;
}

/** The run's Bench, and the systems it started (every one is stopped when the run ends). */
async function makeBench(options: Options, selected: ReadonlySet<ScenarioName>, dir: string): Promise<Bench & { systems: System[] }> {
  const systems: System[] = [];
  const ids = firstIds();
  const report: Report = { rows: [], webhookRows: [], tables: [], webhookSummaries: [], scrapers: new Map(), summaries: [], durability: [] };
  // pgSystems: PostgreSQL servers, whose rows count PostgreSQL's CPU too.
  const pgSystems = new Set<System>();
  const postmaster = options.postgresUrl ? await findPostmaster(options.postgresUrl).catch(() => undefined) : undefined;
  if (options.postgresUrl && postmaster === undefined) process.stderr.write('PostgreSQL\'s processes are not visible here: no DB CPU column\n');
  const bench: Bench & { systems: System[] } = {
    options, dir, postmaster, report, systems, schemas: [],
    nextCreateId: () => ids.create,
    has: (name) => selected.has(name),
    start: async (starting) => {
      const system = await starting;
      systems.push(system);
      return system;
    },
    startServer: async (name, databaseUrl, file, env = {}, checkout, metrics = false) => {
      const port = metrics ? await freePort() : undefined;
      const system = await bench.start(startPlantstore(name, databaseUrl, join(dir, `${file}.log`),
        { ...env, ...(port === undefined ? {} : { METRICS_PORT: String(port) }) }, checkout, profileFlags(options.profile)));
      if (port !== undefined) report.scrapers.set(system, { url: `http://127.0.0.1:${port}/metrics`, scrapes: 0, failures: 0, bytes: 0, label: file });
      if (databaseUrl.startsWith('postgres')) pgSystems.add(system);
      return system;
    },
    featured: (name, databaseUrl, file, env = {}, checkout) => bench.startServer(name, databaseUrl, file, env, checkout, true),
    target: (system: System, kind: Kind, token?: string, path = kind === 'list' ? LIST_PATH : '/plants'): Target => ({
      system, kind, path, headers: token ? auth(token) : {}, acknowledged: [], results: [],
      scrape: report.scrapers.get(system), postmaster: pgSystems.has(system) ? postmaster : undefined,
    }),
    load: (target, seconds, warmup = false) => load(target, seconds, options.connections, ids, warmup),
    loadTogether: (targets, seconds) => loadTogether(targets, seconds, options.connections, ids),
    rounds: async (title, targets) => {
      process.stderr.write(`${title}\n`);
      for (const t of targets) if (t.system.name.startsWith('plantstore')) resetPeakRss(t.system.pid);
      for (const t of targets) await bench.load(t, WARMUP_S, true);
      for (let round = 0; round < options.rounds; round++) {
        const line = [];
        for (const t of targets) {
          await bench.load(t, options.durationS);
          line.push(`${t.system.name} ${Math.round(t.results.at(-1)?.rps ?? 0)}`);
        }
        process.stderr.write(`  round ${round + 1}: ${line.join(', ')} req/s\n`);
      }
      for (const t of targets) if (t.system.name.startsWith('plantstore')) t.rssMb = peakRssMb(t.system.pid);
    },
  };
  return bench;
}

/** A Markdown table, its columns as wide as their widest cell, as docs/performance.md quotes it. */
function printCells({ header, lines }: Table): void {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
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
  printCells({ header, lines });
}

/** The tables, then the notes: deliveries, scrapes, the mix, durability, the stores, what the rows ran with. */
async function printReport(bench: Bench & { systems: System[] }, stores: Stores): Promise<void> {
  const { rows, webhookRows, tables, webhookSummaries, scrapers, summaries, durability } = bench.report;
  const printed = [...(rows.length > 0 ? [() => printTable(rows)] : []), ...(webhookRows.length > 0 ? [() => printTable(webhookRows)] : []),
    ...tables.map((table) => () => printCells(table))];
  for (const print of printed) {
    console.log();
    print();
  }
  console.log();
  for (const line of webhookSummaries) console.log(line);
  for (const [system, scraper] of scrapers) if (scraper.scrapes > 0) console.log(scrapeNote(system, scraper));
  for (const line of summaries) console.log(line);
  for (const [name, t, url, ownerOf] of durability) {
    const stored = await countStored(url, t.acknowledged, ownerOf);
    const answered = t.acknowledged.length;
    console.log(`durability (${name}): ${answered.toLocaleString('en-US')} creates answered 200; ` +
      (stored === answered ? 'every one of them is in the store' : `only ${stored.toLocaleString('en-US')} of them are in the store: FAILED`));
  }
  const storesLine = storesNote(stores, bench);
  if (storesLine !== undefined) console.log(storesLine);
  if (rows.length + webhookRows.length > 0) console.log('rows of scenarios 1, 2 and 5 run with metrics on (scraped while loaded) and one webhook endpoint registered by another user; ' +
    'DB CPU: every PostgreSQL process\'s CPU over the load (backends and background workers; processes that exited during it are missed).' +
    `${bench.options.postgresUrl ? '' : ' PostgreSQL: not run (pass --postgres URL or DATABASE_URL=postgres://…).'}`);
  if (bench.options.profile !== undefined) {
    console.log(`CPU profiles in ${bench.options.profile}, named CPU.<date>.<time>.<pid>.…cpuprofile: ` +
      bench.systems.filter((s) => s.name.includes('plantstore') || s.name.includes('baseline')).map((s) => `${s.name} ${s.pid}`).join('; '));
  }
}

async function main(): Promise<void> {
  const { options, selected } = parseOptions();
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-bench-'));
  const started = Date.now();
  let bench: (Bench & { systems: System[] }) | undefined;
  try {
    ensureWrk();
    const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
    console.log(`plantstore bench, ${new Date().toISOString().slice(0, 10)}: ${availableParallelism()} cores (${cpu}), Node ${process.version}, ` +
      `load generator wrk (1 thread) on the same machine, ${options.connections} connections, ${options.rounds} rounds × ${options.durationS} s each, medians; ` +
      `scenarios: ${[...selected].join(', ')}`);
    bench = await makeBench(options, selected, dir);
    const stores = await runScenarios(bench);
    await printReport(bench, stores);
    console.log(`finished in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    for (const s of bench?.systems ?? []) await s.stop();
    const schemas = bench?.schemas ?? [];
    if (options.keep) {
      console.log(`kept: ${dir} (server logs, stores)${schemas.length > 0 ? `; PostgreSQL schemas ${schemas.join(', ')}` : ''}`);
    } else {
      if (options.postgresUrl) for (const schema of schemas) await dropPostgresSchema(options.postgresUrl, schema);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

try {
  await main();
} catch (error) {
  if (!(error instanceof Refusal)) throw error;
  console.error(`npm run bench: ${error.message}`);
  process.exitCode = 2;
}
