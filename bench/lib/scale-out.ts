// The scale-out scenario's arithmetic, apart from its processes so that it can be tested: which numbers
// of instances run, what N wrk processes loading N servers at once add up to, each row's × one instance
// and efficiency, and whether PostgreSQL accepts the connections the instances open.
import { OPTIONS } from '../../src/config/options.js';
import { Refusal, type Together } from './bench.js';
import { median } from './stats.js';

export type ScaleSystem = 'bare' | 'plantstore';
export type ScaleKind = 'list' | 'create';

/**
 * --instances: a comma-separated list of positive whole numbers, returned sorted without repeats. 1 is
 * always among them, added when missing: × one instance divides by it.
 */
export function parseInstances(text: string): number[] {
  const counts = text.split(',').map((part) => part.trim());
  for (const part of counts) {
    if (!/^\d+$/.test(part) || Number(part) < 1 || !Number.isSafeInteger(Number(part))) {
      throw new Refusal(`--instances: "${part}" is not a positive whole number; give a list such as 1,2,4,8`);
    }
  }
  return [...new Set([1, ...counts.map(Number)])].sort((a, b) => a - b);
}

const POOL_OPTION = OPTIONS.find((o) => o.env === 'DATABASE_POOL_SIZE');

/** plantstore's own default DATABASE_POOL_SIZE, read from its settings table. */
export const DEFAULT_POOL_SIZE = Number(POOL_OPTION?.default);

/** --pool-size, else DATABASE_POOL_SIZE of the bench's environment (the instances inherit it), else plantstore's default. */
export function parsePoolSize(flag: string | undefined, env: string | undefined): number {
  const [text, source] = flag !== undefined ? [flag, '--pool-size'] : env !== undefined ? [env, 'DATABASE_POOL_SIZE'] : [String(DEFAULT_POOL_SIZE), 'default'];
  const values = POOL_OPTION?.values;
  const [min, max] = values?.kind === 'integer' ? [values.min, values.max] : [1, Infinity];
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min || n > max) throw new Refusal(`${source}: "${text}" is not a pool size from ${min} to ${max}`);
  return n;
}

/** What one wrk process measured of its server. */
export interface WrkShare {
  readonly requests: number;
  readonly rps: number;
  readonly p99: number;
  readonly errors: number;
}

/** Adds up the wrk processes of one load; `serverCpuUs` and `dbCpuUs` are totals over the load, in µs. */
export function together(shares: readonly WrkShare[], serverCpuUs: number, dbCpuUs: number | undefined): Together {
  const requests = Math.max(1, shares.reduce((n, s) => n + s.requests, 0));
  return {
    rps: shares.reduce((n, s) => n + s.rps, 0),
    p99: Math.max(0, ...shares.map((s) => s.p99)),
    errors: shares.reduce((n, s) => n + s.errors, 0),
    cpuUs: serverCpuUs / requests,
    dbCpuUs: dbCpuUs === undefined ? undefined : dbCpuUs / requests,
  };
}

/** One system and kind at one N over its rounds: medians, and the errors of every round added up. */
export interface Measured extends Together {
  readonly instances: number;
  readonly system: ScaleSystem;
  readonly kind: ScaleKind;
}

export function overRounds(instances: number, system: ScaleSystem, kind: ScaleKind, rounds: readonly Together[]): Measured {
  const dbs = rounds.map((r) => r.dbCpuUs);
  return {
    instances, system, kind,
    rps: median(rounds.map((r) => r.rps)),
    p99: median(rounds.map((r) => r.p99)),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    cpuUs: median(rounds.map((r) => r.cpuUs)),
    dbCpuUs: dbs.some((d) => d === undefined) ? undefined : median(dbs as number[]),
  };
}

export interface ScaleRow extends Measured {
  /** req/s ÷ the same system's and kind's with one instance; undefined when that one answered nothing. */
  readonly timesOne: number | undefined;
  /** timesOne ÷ N: 1 when N instances answer N times what one does. */
  readonly efficiency: number | undefined;
  /** plantstore's rows: its efficiency ÷ the bare servers' at the same N and kind, what is plantstore's own. */
  readonly ofBare: number | undefined;
}

/** The rows, ordered by N, then lists before creates, bare before plantstore. */
export function scaleRows(measured: readonly Measured[]): ScaleRow[] {
  const find = (n: number, system: ScaleSystem, kind: ScaleKind) => measured.find((m) => m.instances === n && m.system === system && m.kind === kind);
  const efficiencyOf = (m: Measured | undefined) => {
    const one = m && find(1, m.system, m.kind);
    const timesOne = m && one && one.rps > 0 ? m.rps / one.rps : undefined;
    return { timesOne, efficiency: m && timesOne !== undefined ? timesOne / m.instances : undefined };
  };
  const order = (m: Measured) => [m.instances, m.kind === 'list' ? 0 : 1, m.system === 'bare' ? 0 : 1];
  const sorted = [...measured].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return (x[0]! - y[0]!) || (x[1]! - y[1]!) || (x[2]! - y[2]!);
  });
  return sorted.map((m) => {
    const own = efficiencyOf(m);
    const bare = m.system === 'plantstore' ? efficiencyOf(find(m.instances, 'bare', m.kind)).efficiency : undefined;
    const ofBare = own.efficiency !== undefined && bare !== undefined && bare > 0 ? own.efficiency / bare : undefined;
    return { ...m, ...own, ofBare };
  });
}

export const SCALE_HEADER = ['instances', 'system', 'kind', 'req/s', '× one', 'efficiency', '÷ bare\'s', 'p99 ms (worst wrk)',
  'CPU µs/req (instances)', 'DB CPU µs/req', 'non-2xx'];

const percent = (x: number | undefined) => (x === undefined ? '' : `${Math.round(x * 100)}%`);

/** The printed table's cells, under SCALE_HEADER. */
export function scaleCells(rows: readonly ScaleRow[]): string[][] {
  return rows.map((r) => [
    String(r.instances),
    r.system === 'bare' ? 'bare node:http' : 'plantstore postgres',
    r.kind,
    Math.round(r.rps).toLocaleString('en-US'),
    r.timesOne === undefined ? '' : `${r.timesOne.toFixed(2)}×`,
    percent(r.efficiency),
    percent(r.ofBare),
    r.p99.toFixed(1),
    r.cpuUs.toFixed(0),
    r.dbCpuUs === undefined ? '' : r.dbCpuUs.toFixed(0),
    String(r.errors),
  ]);
}

/** The line of the stored check: every create answered 2xx, at every N, looked up in the store. */
export function storedLine(answered: number, stored: number): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return `scale-out: ${n(answered)} creates answered 200 at every N; ` +
    (stored === answered ? 'every one is in the store' : `only ${n(stored)} of them are in the store: FAILED`);
}

/** PostgreSQL's connection settings and use, as read before the instances start. */
export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly superuserReserved: number;
  /** reserved_connections (PostgreSQL 16 and later; 0 before). */
  readonly reserved: number;
  /** Client connections open now, the bench's own included. */
  readonly inUse: number;
}

export interface ConnectionVerdict {
  readonly fits: boolean;
  readonly needed: number;
  readonly available: number;
  readonly line: string;
}

/**
 * Whether `instances` plantstore instances can all open their connections: each opens up to `poolSize`
 * in its pool and one more, outside the pool, that listens for other instances' webhook events. The
 * reserved slots are not counted as available even when the bench's role may use them: instances that
 * took them would lock an administrator out.
 */
export function connectionVerdict(limits: ConnectionLimits, instances: number, poolSize: number): ConnectionVerdict {
  const { maxConnections, superuserReserved, reserved, inUse } = limits;
  const needed = instances * (poolSize + 1);
  const available = maxConnections - superuserReserved - reserved - inUse;
  const fits = needed <= available;
  const reservedText = reserved > 0 ? ` − ${reserved} reserved_connections` : '';
  const line = `PostgreSQL connections: ${instances} instances × (DATABASE_POOL_SIZE ${poolSize} + 1 listening) = ${needed} needed; ` +
    `${available} available (max_connections ${maxConnections} − ${superuserReserved} superuser_reserved_connections${reservedText} − ${inUse} in use)` +
    (fits ? ': fits' : ': does NOT fit');
  if (fits) return { fits, needed, available, line };
  const minimum = needed + superuserReserved + reserved + inUse;
  const pool = Math.floor(available / instances) - 1;
  const fewer = Math.floor(available / (poolSize + 1));
  // One instance always runs (× one divides by it): where not even that fits, max_connections is the only fix.
  const other = pool >= 1 ? `, or give the instances smaller pools (--pool-size ${pool})`
    : fewer >= 1 ? `, or run fewer instances (--instances up to ${fewer})` : '';
  return {
    fits, needed, available,
    line: `${line}. Raise max_connections to ${minimum} or more (ALTER SYSTEM SET max_connections = ${minimum}; then restart PostgreSQL)${other}.`,
  };
}

/**
 * The N from which the machine is short of cores: N instances and N wrk processes, each wanting a core
 * at saturation, and PostgreSQL beside them. From there, × one and efficiency measure the machine as
 * much as plantstore, which is why the bare servers' are in the table.
 */
export const shortOfCoresFrom = (cores: number): number => Math.floor(cores / 2) + 1;
