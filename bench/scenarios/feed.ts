// The feed scenario: one server with --subscribers streams open to GET /plants/events, all of them the
// bench user's (read-only tokens, as many to a token as the server allows), so that every create is an
// event on every stream. Per round: a paced phase, creates at --feed-rate a second from the bench's
// process, each (event, stream) pair's time from the create's 200 to the event's arrival; wrk's creates
// with the streams open, after which every stream must have had every create answered 200; then the
// streams closed and wrk's creates without them: the rates of the two, same server, same round. On a
// bare node:http fan-out (the bound), plantstore on SQLite, and on PostgreSQL when it runs.
import { OPTIONS } from '../../src/config/options.js';
import { WARMUP_S, type Bench, type Target } from '../lib/bench.js';
import {
  FEED_HEADER, feedCells, feedGoals, pairsOf, perCore, summarize, tokensFor, type CreateLoad, type FeedMeasured, type PhasePairs,
} from '../lib/feed.js';
import { pacedCreates, startSubscribers, type Subscribers } from '../lib/feed-clients.js';
import type { Collected } from '../servers/feed-subscribers.js';
import { median } from '../lib/stats.js';
import { issueTokens, seedPostgres } from '../lib/seed.js';
import { SMALL, type Stores } from '../lib/stores.js';
import { rssMb, startBareFeed, type System } from '../lib/systems.js';
import { cpuMicros } from '../lib/wrk.js';

const TITLE = 'feed: GET /plants/events, creates';
/** The paced creates' ids: far above wrk's (1e12 + 1e8 a load), a million a phase. */
const PACED_FIRST_ID = 4_000_000_000_000;
const PACED_IDS_PER_PHASE = 1_000_000;
/** How long the events of the creates already answered may take to reach every stream… */
const PACED_SETTLE_MS = 10_000;
const LOADED_SETTLE_MS = 120_000;
/** …unless none arrives for this long: what is missing then is not coming. */
const QUIET_MS = 5000;

/** A setting's default from plantstore's settings table, where the feed's limits are. */
function settingDefault(env: string): number {
  const option = OPTIONS.find((o) => o.env === env);
  if (option === undefined) throw new Error(`plantstore has no setting ${env}: is the feed in this checkout?`);
  return Number(option.default);
}

/** Who writes and who reads on one system: the creates' token, and the streams' tokens (as many to each as allowed). */
interface Access {
  readonly writer: string | undefined;
  readonly readers: readonly string[];
}

/** What one system's rounds saw besides the table's figures, for its note. */
interface Notes {
  opened: { ms: number }[];
  pacedCpu: number[];
  loadedCpu: number[];
  loopDelay: number[];
  drainMs: number[];
  ends: Record<string, number>;
  dropped: number;
  late: number;
  failed: number;
  loadedCreates: number;
}

const share = (cpuUs: number, wallMs: number) => cpuUs / 1000 / wallMs;

/** Streams the server ended (by reason) or that dropped, since the last mark. */
function countEnds(notes: Notes, collected: Collected): void {
  for (const [reason, n] of Object.entries(collected.ends)) notes.ends[reason] = (notes.ends[reason] ?? 0) + n;
  notes.dropped += collected.dropped;
}

async function openAll(subs: Subscribers, system: System, access: Access, count: number, notes: Notes): Promise<void> {
  const opened = await subs.open(system.url, access.readers, count);
  if (opened.open !== count) {
    throw new Error(`feed: only ${opened.open} of ${count} streams to ${system.name} opened (${JSON.stringify(opened.refused)}); ` +
      `the first refusal: ${opened.firstRefusal}`);
  }
  notes.opened.push(opened);
}

/** Creates at the feed rate for `seconds`; each pair's latency once the events of every 200 have arrived (or timed out). */
async function pacedPhase(
  bench: Bench, subs: Subscribers, system: System, access: Access, seconds: number, phase: number, notes: Notes, warmup = false,
): Promise<PhasePairs> {
  await subs.mark(true);
  await subs.loop();
  const cpu = cpuMicros(subs.pid);
  const started = performance.now();
  const paced = await pacedCreates(system.url, access.writer ?? '', PACED_FIRST_ID + phase * PACED_IDS_PER_PHASE, bench.options.feedRate, seconds);
  await subs.settle(paced.acks.size, [...paced.acks.keys()], PACED_SETTLE_MS, QUIET_MS);
  const cpuShare = share(cpuMicros(subs.pid) - cpu, performance.now() - started);
  const loop = await subs.loop();
  const collected = await subs.collect();
  countEnds(notes, collected);
  if (!warmup) {
    notes.pacedCpu.push(cpuShare);
    notes.loopDelay.push(loop.delayP99Ms);
    notes.late += paced.late;
    notes.failed += paced.failed;
  }
  return pairsOf(paced.acks, collected.arrivals, bench.options.subscribers);
}

/** wrk's creates with the streams open; the pairs missing once the streams have drained. */
async function loadedPhase(bench: Bench, subs: Subscribers, target: Target, seconds: number, notes: Notes, warmup = false): Promise<number> {
  await subs.mark(false);
  const acknowledged = target.acknowledged.length;
  const cpu = cpuMicros(subs.pid);
  const started = performance.now();
  await bench.load(target, seconds, warmup);
  const loadMs = performance.now() - started;
  const loadCpu = cpuMicros(subs.pid) - cpu;
  const expected = target.acknowledged.length - acknowledged;
  const settled = await subs.settle(expected, undefined, LOADED_SETTLE_MS, QUIET_MS);
  countEnds(notes, await subs.collect());
  if (warmup) return 0;
  notes.loadedCpu.push(share(loadCpu, loadMs));
  notes.drainMs.push(settled.ms);
  notes.loadedCreates += expected;
  return settled.missing;
}

const loadOf = (t: Target): CreateLoad => ({ rps: t.results.at(-1)?.rps ?? 0, cpuUs: t.results.at(-1)?.cpuUs ?? 0 });

/** One system's rounds: with streams (paced, then wrk), without (wrk), alternating. */
async function measure(bench: Bench, subs: Subscribers, system: System, access: Access, goals: boolean): Promise<[FeedMeasured, Notes]> {
  const { rounds, durationS, subscribers } = bench.options;
  const notes: Notes = { opened: [], pacedCpu: [], loadedCpu: [], loopDelay: [], drainMs: [], ends: {}, dropped: 0, late: 0, failed: 0, loadedCreates: 0 };
  const withStreams = bench.target(system, 'create', access.writer);
  const withoutStreams = bench.target(system, 'create', access.writer);
  process.stderr.write(`${TITLE}, ${system.name}\n`);
  await bench.load(withoutStreams, WARMUP_S, true);
  const rssWithoutMb = rssMb(system.pid);
  await openAll(subs, system, access, subscribers, notes);
  let phase = 0;
  await pacedPhase(bench, subs, system, access, 1, phase++, notes, true);
  await loadedPhase(bench, subs, withStreams, WARMUP_S, notes, true);
  const pairs: PhasePairs[] = [];
  const rssWithMb: number[] = [];
  const loads = { with: [] as CreateLoad[], without: [] as CreateLoad[] };
  let missingUnderLoad = 0;
  for (let round = 0; round < rounds; round++) {
    if (round > 0) await openAll(subs, system, access, subscribers, notes);
    const paced = await pacedPhase(bench, subs, system, access, durationS, phase++, notes);
    pairs.push(paced);
    const missing = await loadedPhase(bench, subs, withStreams, durationS, notes);
    missingUnderLoad += missing;
    loads.with.push(loadOf(withStreams));
    rssWithMb.push(rssMb(system.pid));
    await subs.close();
    await bench.load(withoutStreams, durationS);
    loads.without.push(loadOf(withoutStreams));
    const latency = summarize([paced]);
    process.stderr.write(`  round ${round + 1}: latency p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms over ` +
      `${latency.pairs.toLocaleString('en-US')} pairs; creates ${Math.round(loads.with.at(-1)?.rps ?? 0)} req/s with streams, ` +
      `${Math.round(loads.without.at(-1)?.rps ?? 0)} without${latency.missing + missing > 0 ? `; ${latency.missing + missing} pairs MISSING` : ''}\n`);
  }
  const measured: FeedMeasured = {
    system: system.name, goals, subscribers, latency: summarize(pairs), withStreams: loads.with, withoutStreams: loads.without,
    rssWithoutMb, rssWithMb, missingUnderLoad,
  };
  return [measured, notes];
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const pct = (xs: number[]) => `${Math.round(median(xs) * 100)}%`;

function note(m: FeedMeasured, notes: Notes, tokens: number, rate: number): string {
  const { latency } = m;
  const ends = Object.entries(notes.ends).map(([reason, count]) => `${count} ${reason}`);
  const verdict = feedGoals(m);
  const core = perCore(m);
  return `feed (${m.system}): ${n(m.subscribers)} streams` + (tokens > 1 ? ` on ${n(tokens)} tokens` : '') +
    `, opened in ${(median(notes.opened.map((o) => o.ms)) / 1000).toFixed(1)} s; paced: ${n(latency.events)} creates answered 200 (${rate}/s) × ` +
    `${n(m.subscribers)} streams, ${n(latency.pairs)} pairs arrived` +
    (latency.missing === 0 ? ' (every one)' : `, ${n(latency.missing)} MISSING`) +
    (notes.failed > 0 ? `, ${n(notes.failed)} creates not answered 200` : '') +
    (notes.late > 0 ? `, ${n(notes.late)} creates sent late (the creator fell behind)` : '') +
    `; under wrk: ${n(notes.loadedCreates)} creates answered 200, ` +
    (m.missingUnderLoad === 0
      ? `each on every stream, the last ${n(median(notes.drainMs))} ms after the load (median)`
      : `${n(m.missingUnderLoad)} (create, stream) pairs MISSING after waiting ${n(Math.max(...notes.drainMs))} ms: FAILED`) +
    `; per core of the server: ${n(core.without)} creates/s without streams, ${n(core.with)} with them (${core.ratio.toFixed(2)}×)` +
    `; streams ended by the server: ${ends.length === 0 ? 'none' : ends.join(', ')}` +
    (notes.dropped > 0 ? `, ${n(notes.dropped)} dropped without an end event` : '') +
    `; subscriber process: ${pct(notes.pacedCpu)} of a core paced (event-loop delay p99 ${median(notes.loopDelay).toFixed(1)} ms), ` +
    `${pct(notes.loadedCpu)} under wrk` +
    (verdict && !verdict.delivered ? '; NOT every event reached every stream: FAILED' : '');
}

async function onPlantstore(bench: Bench, subs: Subscribers, name: string, databaseUrl: string, writer: string, file: string): Promise<[FeedMeasured, string]> {
  const { subscribers, feedRate } = bench.options;
  const perToken = settingDefault('FEED_MAX_STREAMS_PER_TOKEN');
  const tokens = tokensFor(subscribers, perToken);
  const readers = await issueTokens(databaseUrl, tokens);
  // The instance's own limit only when the bench asks for more streams than its default allows.
  const env = subscribers > settingDefault('FEED_MAX_STREAMS') ? { FEED_MAX_STREAMS: String(subscribers) } : {};
  const system = await bench.startServer(name, databaseUrl, file, env);
  try {
    const [measured, notes] = await measure(bench, subs, system, { writer, readers }, true);
    return [measured, note(measured, notes, tokens, feedRate)];
  } finally {
    await subs.close();
    await system.stop();
  }
}

export async function feed(bench: Bench, stores: Stores): Promise<void> {
  const { subscribers, feedRate, postgresUrl } = bench.options;
  const subs = await bench.start(startSubscribers());
  const rows: FeedMeasured[] = [];
  const notes: string[] = [];
  const bare = await bench.start(startBareFeed());
  try {
    const [measured, bareNotes] = await measure(bench, subs, bare, { writer: undefined, readers: ['unused'] }, false);
    rows.push(measured);
    notes.push(note(measured, bareNotes, 1, feedRate));
  } finally {
    await subs.close();
    await bare.stop();
  }
  const [sqlite, sqliteNote] = await onPlantstore(bench, subs, 'plantstore sqlite', `sqlite:${stores.small}.feed`, stores.smallToken, 'feed-sqlite');
  rows.push(sqlite);
  notes.push(sqliteNote);
  if (postgresUrl) {
    const schema = `bench_feed_${Math.random().toString(16).slice(2, 8)}`;
    bench.schemas.push(schema);
    const pg = await seedPostgres(postgresUrl, schema, SMALL);
    const [m, line] = await onPlantstore(bench, subs, 'plantstore postgres', pg.url, pg.token, 'feed-pg');
    rows.push(m);
    notes.push(line);
  }
  await subs.stop();
  bench.report.tables.push({ header: FEED_HEADER, lines: feedCells(TITLE, rows) });
  bench.report.summaries.push(...notes,
    `feed: each round, ${bench.options.durationS} s of creates paced at ${feedRate}/s from the bench's process, then wrk's creates (1 thread, ` +
    `${bench.options.connections} connections) with the ${n(subscribers)} streams open, then the streams closed and wrk's creates without them: ` +
    'creates/s with and without, the same server in the same round. Latency: from the moment a paced create\'s 200 reached the bench to the ' +
    'moment its event reached a stream, both on CLOCK_MONOTONIC, over every (event, stream) pair of every round (negative: the event came first). ' +
    'The streams are held by one subscriber process on raw sockets; the bare row, a node:http server that writes each turn\'s events to every ' +
    'stream, is the bound: what that process and the platform add alone. Per core: 10^6 ÷ the server\'s CPU µs per create, steadier than ' +
    'creates/s where the subscriber process shares the cores. RSS: the server\'s VmRSS, idle, after a create load before any stream opened ' +
    '(without) and with every stream open after each round\'s loads (with, median).');
}

