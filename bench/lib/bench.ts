// What every scenario is given: the run's settings and the runner's services (starting systems, one
// load, the rounds), and the report it adds its rows and notes to; run.ts makes one per run.
import type { Scraper } from './scrape.js';
import type { System } from './systems.js';

/** The scenarios, in the order --only names them (run.ts runs them in its own order). */
export const SCENARIO_NAMES = ['list', 'create', 'scale', 'webhooks', 'mix', 'jwt', 'metrics', 'scale-out', 'feed'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/**
 * What the bench refuses before it starts anything (a flag, a setting of PostgreSQL): its message says
 * what and how to fix it, and is printed alone, without a stack that would bury it.
 */
export class Refusal extends Error {}

/** Seconds of load before the counted rounds, for every target. */
export const WARMUP_S = 2;

export interface Options {
  readonly rounds: number;
  readonly durationS: number;
  readonly connections: number;
  /** --postgres, or DATABASE_URL when it is a PostgreSQL one: the PostgreSQL rows run only with it. */
  readonly postgresUrl: string | undefined;
  /** --baseline: the checkout whose built bin/plantstore.js gets rows of its own. */
  readonly baseline: string | undefined;
  readonly profile: string | undefined;
  readonly keep: boolean;
  /** --instances: the scale-out scenario's numbers of instances, sorted, 1 among them. */
  readonly instances: readonly number[];
  /** --pool-size: the scale-out instances' DATABASE_POOL_SIZE. */
  readonly poolSize: number;
  /** --subscribers: the feed scenario's streams. */
  readonly subscribers: number;
  /** --feed-rate: the feed scenario's paced creates a second. */
  readonly feedRate: number;
}

export type Kind = 'list' | 'create' | 'mix';

export interface Measurement {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly cpuUs: number;
  readonly dbCpuUs: number | undefined;
}

/** One load of N servers at once, by N wrk processes (the scale-out scenario's). */
export interface Together {
  /** Requests a second of all the servers: the sum of the wrk processes'. */
  readonly rps: number;
  /** The worst of the wrk processes' p99s: wrk reports percentiles, not the latencies, so they cannot be merged. */
  readonly p99: number;
  readonly errors: number;
  /** The servers' CPU over the load, added up, per request answered by any of them. */
  readonly cpuUs: number;
  /** PostgreSQL's CPU over the load (once, for every server together), per request. */
  readonly dbCpuUs: number | undefined;
}

export interface Target {
  readonly system: System;
  readonly kind: Kind;
  /** Path and headers of the request; creates get a unique id each. The mix: its script's data file instead. */
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The ids of creates answered 2xx, to check afterwards that each one was stored. */
  readonly acknowledged: number[];
  readonly results: Measurement[];
  rssMb?: number;
  /** A server with metrics on: scraped while it is loaded, as Prometheus would. */
  readonly scrape?: Scraper | undefined;
  /** A PostgreSQL server's rows: the postmaster whose processes' CPU is counted too. */
  readonly postmaster?: number | undefined;
}

/** A row of the printed table. */
export interface Row {
  scenario: string;
  target: Target;
  reference?: Target;
  referenceName?: string;
  goal?: number;
  /** The rows held to a latency goal as well: p99 ≤ P99_GOAL_MS too, shown in the target cell. */
  p99Goal?: boolean;
}

/** A durability check: a name, the target whose creates were acknowledged, its store, and each id's owner when not the bench user. */
export type Durability = [string, Target, string, ((id: number) => string)?];

/** A table of its own columns, printed as the others are. */
export interface Table {
  readonly header: readonly string[];
  readonly lines: ReadonlyArray<readonly string[]>;
}

/** What the run prints after its rounds, in this order. */
export interface Report {
  /** The main table: scenarios 1, 2, 3 and 5 (and the metrics pairs). */
  readonly rows: Row[];
  /** Scenario 4's table, printed apart. */
  readonly webhookRows: Row[];
  /** Tables whose columns are not the rows' (the scale-out and feed scenarios'), after them. */
  readonly tables: Table[];
  readonly webhookSummaries: string[];
  /** Every server with metrics on, and its scrapes. */
  readonly scrapers: Map<System, Scraper>;
  readonly summaries: string[];
  readonly durability: Durability[];
}

export interface Bench {
  readonly options: Options;
  /** The work folder: stores, server logs, the mix's data files. */
  readonly dir: string;
  /** PostgreSQL's postmaster, where its processes are visible here: the PostgreSQL rows' DB CPU. */
  readonly postmaster: number | undefined;
  readonly report: Report;
  /** The PostgreSQL schemas made for this run, dropped at its end unless --keep. */
  readonly schemas: string[];
  /** The first id the next create load will use; ids below it are never counted. */
  nextCreateId(): number;
  has(name: ScenarioName): boolean;
  /** Tracks a system just started, so that it is stopped when the run ends, whatever happens. */
  start<T extends System>(starting: Promise<T>): Promise<T>;
  /** plantstore on `databaseUrl`, its log in the work folder as `file`.log; `checkout`: another build (--baseline). */
  startServer(name: string, databaseUrl: string, file: string, env?: NodeJS.ProcessEnv, checkout?: string, metrics?: boolean): Promise<System>;
  /** The same with the features on that production has: metrics, scraped while loaded. */
  featured(name: string, databaseUrl: string, file: string, env?: NodeJS.ProcessEnv, checkout?: string): Promise<System>;
  /** A target on `system`: the list's first page, or creates, with `token` if given. */
  target(system: System, kind: Kind, token?: string, path?: string): Target;
  /** One load of `target` for `seconds`; a warm-up's numbers are not kept. */
  load(target: Target, seconds: number, warmup?: boolean): Promise<void>;
  /** One load of every target of `targets` at once, a wrk process each, and what they add up to. */
  loadTogether(targets: readonly Target[], seconds: number): Promise<Together>;
  /** Warms every target up, then runs the rounds with the targets taking turns. */
  rounds(title: string, targets: Target[]): Promise<void>;
}

/** The targets that exist: rows for PostgreSQL or a baseline are there only when those run. */
export const present = (...ts: Array<Target | undefined>): Target[] => ts.filter((t): t is Target => t !== undefined);
