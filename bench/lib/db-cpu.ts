// PostgreSQL's own CPU per request: the CPU time (user + system, from /proc) of every process of the
// PostgreSQL server, so that "how many instances can one PostgreSQL server serve" can be projected from
// the bench. Only where PostgreSQL runs on this machine, in a PID namespace we can see.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

const TICK_US = 10_000; // USER_HZ is 100 on Linux

interface ProcStat {
  readonly ppid: number;
  /** Start time in ticks since boot: tells a reused pid from the process read before. */
  readonly start: number;
  /** utime + stime, µs. */
  readonly cpuUs: number;
}

function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone
  }
  // After "pid (comm) ": state is field 3, ppid 4, utime 14, stime 15, starttime 22 (1-based).
  const f = text.slice(text.lastIndexOf(') ') + 2).split(' ');
  return { ppid: Number(f[1]), start: Number(f[19]), cpuUs: (Number(f[11]) + Number(f[12])) * TICK_US };
}

/** The postmaster's pid: the parent of a backend of ours; undefined when PostgreSQL is not visible here. */
export async function findPostmaster(url: string): Promise<number | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const backend = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    return procStat(backend)?.ppid;
  } finally {
    await client.end();
  }
}

export type DbCpuSnapshot = Map<number, ProcStat>;

/** The postmaster and its children (backends, WAL writer, checkpointer, autovacuum…), as they are now. */
export function dbCpuSnapshot(postmaster: number): DbCpuSnapshot {
  const found: DbCpuSnapshot = new Map();
  const own = procStat(postmaster);
  if (own) found.set(postmaster, own);
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = procStat(Number(name));
    if (stat?.ppid === postmaster) found.set(Number(name), stat);
  }
  return found;
}

/**
 * CPU µs used since `before` by the processes alive now: all of a process started since (a pool's new
 * connection), the difference for one alive at both ends. A process that exited in between is missed
 * (its last slice unknown): an approximation, small while the pools keep their connections.
 */
export function dbCpuSince(postmaster: number, before: DbCpuSnapshot): number {
  let us = 0;
  for (const [pid, now] of dbCpuSnapshot(postmaster)) {
    const then = before.get(pid);
    us += then !== undefined && then.start === now.start ? now.cpuUs - then.cpuUs : now.cpuUs;
  }
  return us;
}
