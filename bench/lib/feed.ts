// The feed scenario's arithmetic, apart from its processes so that it can be tested: its flags, the
// clock both of its processes read, each (event, subscriber) pair's latency, percentiles, and the
// printed table's cells and the notes under it.
import { Refusal } from './bench.js';
import { median } from './stats.js';

/** What the goals ask: p99 of the pairs' latencies, and creates with streams open ÷ without. */
export const FEED_P99_GOAL_MS = 50;
export const FEED_RATE_GOAL = 0.9;
export const DEFAULT_SUBSCRIBERS = 1000;
/** Paced creates a second in the latency phase: a steady stream of events, far below the create rate. */
export const DEFAULT_FEED_RATE = 50;
/**
 * Streams of one process to one port on loopback each take an ephemeral port (Linux gives about
 * 28,000), and wrk's connections and the creator's need theirs too.
 */
const MAX_SUBSCRIBERS = 20_000;

/** --subscribers: a whole number from 1 to MAX_SUBSCRIBERS. */
export function parseSubscribers(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < 1 || n > MAX_SUBSCRIBERS) {
    throw new Refusal(`--subscribers: "${text}" is not a number of streams from 1 to ${MAX_SUBSCRIBERS.toLocaleString('en-US')}`);
  }
  return n;
}

/** --feed-rate: paced creates a second, more than 0 and at most 5,000 (a timer a create; wrk measures rates). */
export function parseFeedRate(text: string): number {
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !(n > 0) || n > 5000) {
    throw new Refusal(`--feed-rate: "${text}" is not a number of creates a second above 0 and up to 5,000`);
  }
  return n;
}

/**
 * Milliseconds on CLOCK_MONOTONIC, which every process of the machine reads alike (process.hrtime):
 * the creator stamps its answers in the bench's process, the subscribers their events in theirs.
 * performance.now() would not do: each process counts it from its own start.
 */
export const monotonicMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;

/** How many streams each token opens: the server's limit per token, spread over as few tokens as it allows. */
export function tokensFor(subscribers: number, perToken: number): number {
  return Math.ceil(subscribers / Math.max(1, perToken));
}

/** The p-th percentile (0 < p ≤ 100) of ascending `sorted`, by nearest rank; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** One paced phase's pairs: each acknowledged create against each subscriber's arrival of its event. */
export interface PhasePairs {
  /** Latencies (arrival − the create's 200), ms; negative when the event came before the 200. */
  readonly samples: Float64Array;
  /** Creates answered 200. */
  readonly events: number;
  /** (event, subscriber) pairs that never arrived. */
  readonly missing: number;
  /** Events that arrived for plants whose create was not answered 200 (a timeout, say). */
  readonly unacknowledged: number;
}

/**
 * `acks`: each acknowledged plant id (as text) and when its 200 arrived; `arrivals`: each plant id seen
 * and, per subscriber, when its event arrived (NaN: not yet, or never).
 */
export function pairsOf(acks: ReadonlyMap<string, number>, arrivals: ReadonlyMap<string, Float64Array>, subscribers: number): PhasePairs {
  const samples = new Float64Array(acks.size * subscribers);
  let n = 0;
  let missing = 0;
  for (const [id, acked] of acks) {
    const times = arrivals.get(id);
    for (let s = 0; s < subscribers; s++) {
      const t = times?.[s];
      if (t === undefined || Number.isNaN(t)) missing++;
      else samples[n++] = t - acked;
    }
  }
  let unacknowledged = 0;
  for (const id of arrivals.keys()) if (!acks.has(id)) unacknowledged++;
  return { samples: samples.subarray(0, n), events: acks.size, missing, unacknowledged };
}

export interface LatencySummary {
  readonly events: number;
  readonly pairs: number;
  readonly missing: number;
  readonly unacknowledged: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Every phase's pairs together: percentiles over all of them, not medians of each round's. */
export function summarize(phases: readonly PhasePairs[]): LatencySummary {
  const all = new Float64Array(phases.reduce((n, p) => n + p.samples.length, 0));
  let at = 0;
  for (const p of phases) {
    all.set(p.samples, at);
    at += p.samples.length;
  }
  all.sort();
  const sum = (f: (p: PhasePairs) => number) => phases.reduce((n, p) => n + f(p), 0);
  return {
    events: sum((p) => p.events), pairs: all.length, missing: sum((p) => p.missing), unacknowledged: sum((p) => p.unacknowledged),
    p50: percentile(all, 50), p99: percentile(all, 99), max: all.length === 0 ? NaN : (all[all.length - 1] as number),
  };
}

/** The resident set (VmRSS) of a /proc/<pid>/status text, in MB; NaN when absent. */
export function rssMbOf(status: string): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  return kb === undefined ? NaN : Math.round(Number(kb) / 1024);
}

/** One create load under wrk: its rate and the server's CPU per create. */
export interface CreateLoad {
  readonly rps: number;
  readonly cpuUs: number;
}

/** What the scenario measured of one system, every round. */
export interface FeedMeasured {
  readonly system: string;
  /** Held to the goals (plantstore's rows; the bare server is the bound). */
  readonly goals: boolean;
  readonly subscribers: number;
  readonly latency: LatencySummary;
  readonly withStreams: readonly CreateLoad[];
  readonly withoutStreams: readonly CreateLoad[];
  /** Idle, after a create load, before any stream was opened. */
  readonly rssWithoutMb: number;
  /** Idle, with every stream open, after each round's loads. */
  readonly rssWithMb: readonly number[];
  /** (event, subscriber) pairs missing after the loads under wrk, once the streams had drained. */
  readonly missingUnderLoad: number;
}

/**
 * Creates a second one core of the server would make, with streams and without (10^6 ÷ its CPU µs per
 * create, medians), and their ratio: what the fan-out costs the server itself, which the subscriber
 * process's share of the two cores, wrk's and the noise of other tenants do not move as they move req/s.
 */
export function perCore(m: FeedMeasured): { without: number; with: number; ratio: number } {
  const without = 1e6 / median(m.withoutStreams.map((l) => l.cpuUs));
  const withStreams = 1e6 / median(m.withStreams.map((l) => l.cpuUs));
  return { without, with: withStreams, ratio: withStreams / without };
}

export const FEED_HEADER = ['scenario', 'system', 'subscribers', 'events', 'latency p50 ms', 'p99 ms', 'max ms', 'creates/s without',
  'creates/s with', 'ratio', 'target', 'CPU µs/create without', 'with', 'RSS without', 'RSS with', 'missing'];

const ms = (x: number) => (Number.isNaN(x) ? '' : x.toFixed(1));
const n = (x: number) => Math.round(x).toLocaleString('en-US');

/** Whether a row met each goal: undefined when it is not held to them. */
export function feedGoals(m: FeedMeasured): { p99: boolean; ratio: boolean; delivered: boolean } | undefined {
  if (!m.goals) return undefined;
  const ratio = median(m.withStreams.map((l) => l.rps)) / median(m.withoutStreams.map((l) => l.rps));
  return {
    p99: m.latency.p99 <= FEED_P99_GOAL_MS,
    ratio: ratio >= FEED_RATE_GOAL,
    delivered: m.latency.missing === 0 && m.missingUnderLoad === 0,
  };
}

/** The printed table's cells, under FEED_HEADER: medians over the rounds, latencies over every pair. */
export function feedCells(title: string, rows: readonly FeedMeasured[]): string[][] {
  return rows.map((m, i) => {
    const without = median(m.withoutStreams.map((l) => l.rps));
    const withRps = median(m.withStreams.map((l) => l.rps));
    const goals = feedGoals(m);
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    return [
      i === 0 ? title : '',
      m.system,
      n(m.subscribers),
      n(m.latency.events),
      ms(m.latency.p50),
      ms(m.latency.p99),
      ms(m.latency.max),
      n(without),
      n(withRps),
      without > 0 ? `${(withRps / without).toFixed(2)}× without` : '',
      goals ? `p99 ≤ ${FEED_P99_GOAL_MS} ${met(goals.p99)}, ≥ ${FEED_RATE_GOAL} ${met(goals.ratio)}` : '',
      median(m.withoutStreams.map((l) => l.cpuUs)).toFixed(0),
      median(m.withStreams.map((l) => l.cpuUs)).toFixed(0),
      `${m.rssWithoutMb} MB`,
      `${median([...m.rssWithMb])} MB`,
      n(m.latency.missing + m.missingUnderLoad),
    ];
  });
}
