// The scale-out scenario: N plantstore instances on one PostgreSQL database (the small store's schema,
// shared, as instances behind a load balancer share theirs), each loaded by a wrk process of its own, all
// at once; and N bare servers answering the same bytes, loaded the same way, the ceiling the platform
// itself sets at that N. Lists and durable creates, at each N of --instances. Every create answered 200,
// at every N, is looked for in the store afterwards. Its arithmetic is in lib/scale-out.ts.
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { Refusal, WARMUP_S, type Bench, type Target, type Together } from '../lib/bench.js';
import { countStored } from '../lib/durability.js';
import { answersOf, type BareAnswers } from '../lib/requests.js';
import {
  connectionVerdict, overRounds, SCALE_HEADER, scaleCells, scaleRows, shortOfCoresFrom, storedLine,
  type ConnectionLimits, type Measured, type ScaleKind, type ScaleSystem,
} from '../lib/scale-out.js';
import type { PgStore, Stores } from '../lib/stores.js';
import { startBare, type System } from '../lib/systems.js';

/** What PostgreSQL allows and has open now; reserved_connections exists from PostgreSQL 16 on. */
async function connectionLimits(url: string): Promise<ConnectionLimits> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const settings = await client.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN ('max_connections', 'superuser_reserved_connections', 'reserved_connections')`,
    );
    const setting = (name: string) => Number(settings.rows.find((r) => r.name === name)?.setting ?? 0);
    // Client backends only: background processes (autovacuum, the WAL writer…) have slots of their own.
    const open = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend'`);
    return {
      maxConnections: setting('max_connections'),
      superuserReserved: setting('superuser_reserved_connections'),
      reserved: setting('reserved_connections'),
      inUse: open.rows[0]?.n ?? 0,
    };
  } finally {
    await client.end();
  }
}

/**
 * Whether PostgreSQL accepts the connections of the largest N: run before anything is seeded or started,
 * so that a run that cannot finish stops at once. Says its numbers either way; throws when they do not fit.
 */
export async function checkConnections(bench: Bench): Promise<void> {
  const { postgresUrl, instances, poolSize } = bench.options;
  if (postgresUrl === undefined) throw new Refusal('scale-out needs PostgreSQL: pass --postgres postgres://… or DATABASE_URL=postgres://…');
  const verdict = connectionVerdict(await connectionLimits(postgresUrl), Math.max(...instances), poolSize);
  if (!verdict.fits) throw new Refusal(verdict.line);
  process.stderr.write(`${verdict.line}\n`);
  bench.report.summaries.push(verdict.line);
}

/** One system and kind at one N: a target per server, and what each round's load of them all added up to. */
interface Group {
  readonly system: ScaleSystem;
  readonly kind: ScaleKind;
  readonly targets: Target[];
  readonly rounds: Together[];
}

const label = (g: Group) => `${g.system} ${g.kind}`;

/** Starts N instances and N bare servers, runs the rounds (the four groups taking turns), stops them all. */
async function atN(bench: Bench, pgSmall: PgStore, n: number, answers: (instance: System) => Promise<BareAnswers>): Promise<Group[]> {
  const env = { DATABASE_POOL_SIZE: String(bench.options.poolSize) };
  const range = Array.from({ length: n }, (_, i) => i + 1);
  const instances = await Promise.all(range.map((i) => bench.startServer(`plantstore ${i}/${n}`, pgSmall.url, `scale-out-${n}-${i}`, env)));
  const bytes = await answers(instances[0] as System);
  const bares = await Promise.all(range.map(() => bench.start(startBare(bytes))));
  const group = (system: ScaleSystem, kind: ScaleKind): Group => ({
    system, kind, rounds: [],
    targets: system === 'bare' ? bares.map((s) => bench.target(s, kind)) : instances.map((s) => bench.target(s, kind, pgSmall.token)),
  });
  const groups = [group('bare', 'list'), group('plantstore', 'list'), group('bare', 'create'), group('plantstore', 'create')];
  const plural = n === 1 ? '' : 's';
  process.stderr.write(`scale-out: ${n} instance${plural} on one PostgreSQL database and ${n} bare server${plural}, a wrk process each\n`);
  for (const g of groups) await bench.loadTogether(g.targets, WARMUP_S);
  for (let round = 0; round < bench.options.rounds; round++) {
    for (const g of groups) g.rounds.push(await bench.loadTogether(g.targets, bench.options.durationS));
    process.stderr.write(`  round ${round + 1}: ${groups.map((g) => `${label(g)} ${Math.round(g.rounds.at(-1)?.rps ?? 0)}`).join(', ')} req/s\n`);
  }
  // Less competition for the CPU at the next N, and no instance of this N on the database.
  for (const s of [...instances, ...bares]) await s.stop();
  return groups;
}

export async function scaleOut(bench: Bench, stores: Stores): Promise<void> {
  const { pgSmall } = stores;
  if (pgSmall === undefined) throw new Refusal('scale-out needs PostgreSQL: pass --postgres postgres://… or DATABASE_URL=postgres://…');
  const { instances, connections, poolSize } = bench.options;
  // The bare servers' bytes, taken once, from the first instance started; the create is below the counted ids.
  let bytes: BareAnswers | undefined;
  const answers = async (instance: System) => (bytes ??= await answersOf(instance.url, pgSmall.token, bench.nextCreateId() - 1));
  const measured: Measured[] = [];
  const creates: Target[] = [];
  for (const n of instances) {
    const groups = await atN(bench, pgSmall, n, answers);
    for (const g of groups) measured.push(overRounds(n, g.system, g.kind, g.rounds));
    for (const g of groups) if (g.system === 'plantstore' && g.kind === 'create') creates.push(...g.targets);
  }
  bench.report.tables.push({ header: SCALE_HEADER, lines: scaleCells(scaleRows(measured)) });
  const acknowledged = creates.flatMap((t) => t.acknowledged);
  bench.report.summaries.push(storedLine(acknowledged.length, await countStored(pgSmall.url, acknowledged)));
  const cores = availableParallelism();
  const short = shortOfCoresFrom(cores);
  bench.report.summaries.push(
    `scale-out: at each N, N instances (DATABASE_POOL_SIZE ${poolSize}, metrics off) share the small store's PostgreSQL schema (another user's webhook ` +
    'endpoint registered, as in scenarios 1 and 2), and N bare servers answer ' +
    `the bytes plantstore answers; a wrk process per server (1 thread, ${connections} connections), all at once. req/s: the wrk processes' sum; ` +
    '× one: req/s ÷ the same system\'s with one instance; efficiency: × one ÷ N; ÷ bare\'s: plantstore\'s efficiency ÷ the bare servers\' at the same N; ' +
    'p99: the worst of the wrk processes\' (wrk gives percentiles, which cannot be merged); CPU µs/req: the instances\' CPU added up, per request; ' +
    'DB CPU µs/req: PostgreSQL\'s, read once around all N loads.' +
    (instances.some((n) => n >= short)
      ? ` This machine has ${cores} cores: from N = ${short}, N instances, N wrk processes and PostgreSQL want more cores than it has, ` +
        'so × one and efficiency there measure the machine as much as plantstore; read plantstore\'s against the bare servers\'.'
      : ''),
  );
}
