// One wrk load of one target, and what it cost: requests/s and latency from wrk, the server's CPU time
// per request from /proc (and PostgreSQL's, for PostgreSQL rows), the creates it acknowledged.
import type { Target } from './bench.js';
import { dbCpuSince, dbCpuSnapshot } from './db-cpu.js';
import { MIX_FIRST_ID, MIX_IDS_PER_LOAD, mixScript } from './mix.js';
import { scrapeDuring } from './scrape.js';
import { cpuMicros, wrk } from './wrk.js';

/** The first ids of the next create load and the next mix load: one run's, never shared between runs. */
export interface Ids {
  create: number;
  mix: number;
}

export const firstIds = (): Ids => ({ create: 1_000_000_000_000, mix: MIX_FIRST_ID });

export async function load(target: Target, seconds: number, connections: number, ids: Ids, warmup = false): Promise<void> {
  const mix = target.kind === 'mix';
  const firstId = mix ? ids.mix : ids.create;
  // Far more ids than one load can use, so ids stay unique across loads.
  if (target.kind === 'create') ids.create += 100_000_000;
  if (mix) ids.mix += MIX_IDS_PER_LOAD;
  const cpuBefore = cpuMicros(target.system.pid);
  const dbBefore = target.postmaster === undefined ? undefined : dbCpuSnapshot(target.postmaster);
  const stopScraping = scrapeDuring(target.scrape);
  const result = await wrk({
    url: target.system.url,
    method: target.kind === 'list' ? 'GET' : 'POST',
    path: target.path,
    headers: target.kind === 'list' ? target.headers : { ...target.headers, 'content-type': 'application/json' },
    connections,
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
