// A target's figures over its rounds: medians, because the machines are shared and noisy, and the
// non-2xx answers of every round added up.
import type { Target } from './bench.js';

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export const stat = (t: Target) => ({
  rps: median(t.results.map((r) => r.rps)),
  p50: median(t.results.map((r) => r.p50)),
  p99: median(t.results.map((r) => r.p99)),
  errors: t.results.reduce((n, r) => n + r.errors, 0),
  cpuUs: median(t.results.map((r) => r.cpuUs)),
  dbCpuUs: t.postmaster === undefined ? undefined : median(t.results.map((r) => r.dbCpuUs ?? NaN)),
});
