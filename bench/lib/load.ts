// One wrk load of one target, and what it cost: requests/s and latency from wrk, the server's CPU time
// per request from /proc (and PostgreSQL's, for PostgreSQL rows), the creates it acknowledged. And one
// load of several targets at once, a wrk process each (the scale-out scenario's).
import type { Target, Together } from './bench.js';
import { dbCpuSince, dbCpuSnapshot } from './db-cpu.js';
import { MIX_FIRST_ID, MIX_IDS_PER_LOAD, mixScript } from './mix.js';
import { together } from './scale-out.js';
import { scrapeDuring } from './scrape.js';
import { cpuMicros, wrk, type WrkRun } from './wrk.js';

/** The first ids of the next create load and the next mix load: one run's, never shared between runs. */
export interface Ids {
  create: number;
  mix: number;
}

export const firstIds = (): Ids => ({ create: 1_000_000_000_000, mix: MIX_FIRST_ID });

/** Far more ids than one wrk process can use in a load, so ids stay unique across loads and processes. */
const CREATE_IDS_PER_LOAD = 100_000_000;

/** The next load's first id for `target`, taken from `ids`. */
function takeFirstId(target: Target, ids: Ids): number {
  if (target.kind === 'mix') {
    const first = ids.mix;
    ids.mix += MIX_IDS_PER_LOAD;
    return first;
  }
  const first = ids.create;
  if (target.kind === 'create') ids.create += CREATE_IDS_PER_LOAD;
  return first;
}

function wrkRun(target: Target, seconds: number, connections: number, firstId: number): WrkRun {
  return {
    url: target.system.url,
    method: target.kind === 'list' ? 'GET' : 'POST',
    path: target.path,
    headers: target.kind === 'list' ? target.headers : { ...target.headers, 'content-type': 'application/json' },
    connections,
    seconds,
    firstId,
    ...(target.kind === 'mix' ? { script: (out: string) => mixScript(target.path, out, firstId, firstId / MIX_IDS_PER_LOAD) } : {}),
  };
}

/** Adds ids one by one: spreading hundreds of thousands of them as arguments overflows the stack. */
function acknowledge(target: Target, ids: readonly number[]): void {
  for (const id of ids) target.acknowledged.push(id);
}

export async function load(target: Target, seconds: number, connections: number, ids: Ids, warmup = false): Promise<void> {
  const firstId = takeFirstId(target, ids);
  const cpuBefore = cpuMicros(target.system.pid);
  const dbBefore = target.postmaster === undefined ? undefined : dbCpuSnapshot(target.postmaster);
  const stopScraping = scrapeDuring(target.scrape);
  const result = await wrk(wrkRun(target, seconds, connections, firstId)).finally(stopScraping);
  const requests = Math.max(1, result.requests);
  const cpuUs = (cpuMicros(target.system.pid) - cpuBefore) / requests;
  const dbCpuUs = target.postmaster === undefined || dbBefore === undefined ? undefined : dbCpuSince(target.postmaster, dbBefore) / requests;
  acknowledge(target, result.acknowledged);
  if (warmup) return;
  target.results.push({ rps: result.rps, p50: result.p50, p99: result.p99, errors: result.errors, cpuUs, dbCpuUs });
}

/**
 * `targets` loaded at once, a wrk process each with `connections` connections, for `seconds`: their
 * figures added up (scale-out.ts, together). PostgreSQL's CPU is read once around them all, the
 * postmaster being the first target's: read per target, it would count every server's queries N times.
 * The targets' own results are left alone; each keeps the creates acknowledged by its wrk process.
 */
export async function loadTogether(targets: readonly Target[], seconds: number, connections: number, ids: Ids): Promise<Together> {
  // Every first id is taken before any wrk starts, so that no two processes' ids overlap.
  const firstIds = targets.map((t) => takeFirstId(t, ids));
  const postmaster = targets[0]?.postmaster;
  const cpuBefore = targets.map((t) => cpuMicros(t.system.pid));
  const dbBefore = postmaster === undefined ? undefined : dbCpuSnapshot(postmaster);
  const results = await Promise.all(targets.map((t, i) => wrk(wrkRun(t, seconds, connections, firstIds[i] as number))));
  const serverCpuUs = targets.reduce((sum, t, i) => sum + cpuMicros(t.system.pid) - (cpuBefore[i] as number), 0);
  const dbCpuUs = postmaster === undefined || dbBefore === undefined ? undefined : dbCpuSince(postmaster, dbBefore);
  targets.forEach((t, i) => acknowledge(t, results[i]?.acknowledged ?? []));
  return together(results, serverCpuUs, dbCpuUs);
}
