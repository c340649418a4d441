// Scenario 4, first of all and on processes of its own: creates with one webhook endpoint registered
// (a receiver on loopback answering 200 at once) against the same server without one. Each pair of
// servers has stores of its own (copies of the small store; fresh PostgreSQL schemas), the second with
// the endpoint. 4b: the same for a bare server that POSTs each create on, the bound.
import { WARMUP_S, type Bench, type Target } from '../lib/bench.js';
import { median } from '../lib/stats.js';
import { registerWebhook, seedPostgres } from '../lib/seed.js';
import { SMALL, type Stores } from '../lib/stores.js';
import { startBare, startReceiver } from '../lib/systems.js';

const TITLE = '4. POST /plants, one webhook endpoint vs none';
const HOOKED_ENV = { WEBHOOK_ALLOW_PRIVATE: 'on' };
const DRAIN_TIMEOUT_MS = 180_000;

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
type Counts = { received: number; unique: number };

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
async function untilDelivered(receiver: Receiver, expected: number, timeoutMs: number): Promise<Counts & { ms: number }> {
  const started = performance.now();
  for (;;) {
    const stats = await receiver.stats();
    const ms = performance.now() - started;
    if (stats.unique >= expected || ms > timeoutMs) return { ...stats, ms };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * After each load of the webhook server the bench waits for its backlog to drain, so that the
 * deliveries never run during the other server's turn (which would slow the reference and flatter the
 * ratio), and measures the delivery rate on the way.
 */
async function webhookRounds(bench: Bench, plain: Target, hooked: Target, receiver: Receiver): Promise<WebhookRound[]> {
  const { rounds: count, durationS } = bench.options;
  process.stderr.write(`${TITLE}\n`);
  const rounds: WebhookRound[] = [];
  const loadHooked = async (seconds: number, warmup: boolean) => {
    const before = await receiver.stats();
    const started = performance.now();
    await bench.load(hooked, seconds, warmup);
    const loadMs = performance.now() - started;
    const after = await receiver.stats();
    const end = await untilDelivered(receiver, hooked.acknowledged.length, DRAIN_TIMEOUT_MS);
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
  await bench.load(plain, WARMUP_S, true);
  await loadHooked(WARMUP_S, true);
  for (let round = 0; round < count; round++) {
    await bench.load(plain, durationS);
    const r = await loadHooked(durationS, false);
    process.stderr.write(`  round ${round + 1}: ${plain.system.name} ${Math.round(plain.results.at(-1)?.rps ?? 0)}, ` +
      `${hooked.system.name} ${Math.round(hooked.results.at(-1)?.rps ?? 0)} req/s; deliveries ${Math.round(r.duringLoad)}/s during the load, ` +
      `${Math.round(r.drain)}/s draining${r.drained ? '' : ' (NOT DRAINED)'}\n`);
  }
  return rounds;
}

function webhookSummary(name: string, rounds: WebhookRound[], hooked: Target, stats: Counts): string {
  const acknowledged = hooked.acknowledged.length;
  const overall = median(rounds.map((r) => r.overall));
  return `webhooks (${name}): deliveries ${Math.round(median(rounds.map((r) => r.duringLoad))).toLocaleString('en-US')}/s during the creates, ` +
    `${Math.round(median(rounds.map((r) => r.drain))).toLocaleString('en-US')}/s draining the backlog, ` +
    `${Math.round(overall).toLocaleString('en-US')}/s over load and drain (goal ≥ 2,000 on SQLite: ${overall >= 2000 ? 'met' : 'MISSED'}); ` +
    `${acknowledged.toLocaleString('en-US')} creates answered 200, ${stats.unique.toLocaleString('en-US')} distinct events delivered` +
    `${stats.unique >= acknowledged ? ' (every one)' : ': MISSING SOME'}, ${(stats.received - stats.unique).toLocaleString('en-US')} duplicates` +
    `${rounds.every((r) => r.drained) ? '' : '; a backlog did NOT drain within 3 minutes'}`;
}

/** Runs one pair's rounds and adds its rows (the first titled `title`) and its summary to the report. */
async function pair(bench: Bench, title: string, name: string, plain: Target, hooked: Target, receiver: Receiver): Promise<void> {
  const rounds = await webhookRounds(bench, plain, hooked, receiver);
  bench.report.webhookSummaries.push(webhookSummary(name, rounds, hooked, await receiver.stats()));
  bench.report.webhookRows.push(
    { scenario: title, target: plain },
    { scenario: '', target: hooked, reference: plain, referenceName: 'none', goal: 0.9 },
  );
  await plain.system.stop();
  await hooked.system.stop();
}

async function onSqlite(bench: Bench, stores: Stores, receiver: Receiver): Promise<void> {
  const { small, smallToken } = stores;
  await registerWebhook(`sqlite:${small}.wh1`, `${receiver.url}/hook`);
  const plain = await bench.startServer('plantstore sqlite, no webhook', `sqlite:${small}.wh0`, 'wh0', HOOKED_ENV);
  const hooked = await bench.startServer('plantstore sqlite, 1 webhook', `sqlite:${small}.wh1`, 'wh1', HOOKED_ENV);
  await pair(bench, TITLE, 'sqlite', bench.target(plain, 'create', smallToken), bench.target(hooked, 'create', smallToken), receiver);
}

/** The bound: a bare server doing nothing but answering and POSTing each create on (4b). */
async function bareBound(bench: Bench, receiver: Receiver): Promise<void> {
  const { rounds, durationS } = bench.options;
  const answers = {
    list: { body: '[]', headers: { 'content-type': 'application/json; charset=utf-8' } },
    create: { body: '{"name":"bench plant"}', headers: { 'content-type': 'application/json; charset=utf-8' } },
  };
  const plain = bench.target(await bench.start(startBare(answers)), 'create');
  const forward = bench.target(await bench.start(startBare(answers, `${receiver.url}/hook`)), 'create');
  const title = '4b. the same for a bare server: the bound';
  process.stderr.write(`${title}\n`);
  const settle = async () => {
    // Until the forwarding server has sent what it queued, so that it never runs in the other's turn.
    for (let last = -1, now = (await receiver.stats()).received; now !== last; ) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      [last, now] = [now, (await receiver.stats()).received];
    }
  };
  await bench.load(plain, WARMUP_S, true);
  await bench.load(forward, WARMUP_S, true);
  await settle();
  for (let round = 0; round < rounds; round++) {
    await bench.load(plain, durationS);
    await bench.load(forward, durationS);
    await settle();
    process.stderr.write(`  round ${round + 1}: ${Math.round(plain.results.at(-1)?.rps ?? 0)}, ` +
      `${Math.round(forward.results.at(-1)?.rps ?? 0)} req/s\n`);
  }
  bench.report.webhookRows.push(
    { scenario: title, target: plain },
    { scenario: '', target: forward, reference: plain, referenceName: 'bare' },
  );
  await plain.system.stop();
  await forward.system.stop();
}

async function onPostgres(bench: Bench, postgresUrl: string, receiver: Receiver): Promise<void> {
  // The receiver counts across both backends: the PostgreSQL server's events are those after SQLite's.
  const offset = await receiver.stats();
  const tag = Math.random().toString(16).slice(2, 8);
  bench.schemas.push(`bench_wh0_${tag}`, `bench_wh1_${tag}`);
  const pg0 = await seedPostgres(postgresUrl, `bench_wh0_${tag}`, SMALL);
  const pg1 = await seedPostgres(postgresUrl, `bench_wh1_${tag}`, SMALL);
  await registerWebhook(pg1.url, `${receiver.url}/hook`);
  const plain = await bench.startServer('plantstore postgres, no webhook', pg0.url, 'pg-wh0', HOOKED_ENV);
  const hooked = await bench.startServer('plantstore postgres, 1 webhook', pg1.url, 'pg-wh1', HOOKED_ENV);
  const pgReceiver: Receiver = {
    ...receiver,
    stats: async () => {
      const now = await receiver.stats();
      return { received: now.received - offset.received, unique: now.unique - offset.unique };
    },
  };
  await pair(bench, '4. (PostgreSQL)', 'postgres', bench.target(plain, 'create', pg0.token), bench.target(hooked, 'create', pg1.token), pgReceiver);
}

export async function webhooks(bench: Bench, stores: Stores): Promise<void> {
  const receiver = await bench.start(startReceiver());
  await onSqlite(bench, stores, receiver);
  await bareBound(bench, receiver);
  if (bench.options.postgresUrl) await onPostgres(bench, bench.options.postgresUrl, receiver);
  await receiver.stop();
}
