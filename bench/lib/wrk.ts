// wrk, the load generator of every row: written in C, it leaves the two cores to the servers, where a
// JavaScript generator (autocannon) takes a core's share from them and slows the bare server most, which
// flatters every ratio. Debian's `wrk` is installed on first use when missing.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkRun {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly seconds: number;
  /** POST only: ids are `firstId`, `firstId + 1`, …, each in the body and echoed in the plant's name. */
  readonly firstId?: number;
  /**
   * A script of the caller's instead (the realistic mix), given the file its `done` must write: a first
   * line as this module's own script writes, then the acknowledged ids, one a line.
   */
  readonly script?: (out: string) => string;
}

export interface WrkResult {
  readonly requests: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** Non-2xx answers, connection errors and timeouts. */
  readonly errors: number;
  /** POST: the ids whose create was answered 2xx (read back from the answer's name). */
  readonly acknowledged: number[];
}

export function ensureWrk(): void {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    // wrk --version exits 1 after printing; only a missing binary is ENOENT.
    if ((error as { code?: string }).code !== 'ENOENT') return;
    process.stderr.write('wrk is missing; installing Debian\'s wrk package\n');
    execFileSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk'], { stdio: 'inherit' });
  }
}

const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal here

/** Writes the summary line and the ids the threads acknowledged (their global `acks`) to `out`. */
export function doneFunction(out: string): string {
  return `
done = function(summary, latency, requests)
  local e = summary.errors
  local f = io.open(${lua(out)}, "w")
  f:write(string.format('{"requests":%d,"us":%d,"p50":%d,"p99":%d,"errors":%d}\\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
  for _, t in ipairs(threads) do
    local acks = t:get("acks")
    if acks then for _, id in ipairs(acks) do f:write(id, "\\n") end end
  end
  f:close()
end
threads = {}
setup = function(thread) table.insert(threads, thread) end
`;
}

/**
 * One thread, so that wrk's own CPU is one core at most and one Lua state sees every answer. A create's
 * answer is the Plant, whose name carries its id, so the ids acknowledged can be checked in the store.
 */
function script(run: WrkRun, out: string): string {
  const headers = Object.entries(run.headers).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`).join('\n');
  const common = `
wrk.method = ${lua(run.method)}
wrk.path = ${lua(run.path)}
${headers}
${doneFunction(out)}`;
  if (run.method === 'GET') return common;
  return `${common}
local next_id = ${run.firstId ?? 1}
acks = {}
request = function()
  -- %d: LuaJIT prints large numbers as 1e+12 otherwise
  local id = string.format("%d", next_id)
  local body = '{"id":' .. id .. ',"name":"bench ' .. id .. '"}'
  next_id = next_id + 1
  return wrk.format(nil, nil, nil, body)
end
response = function(status, headers, body)
  if status >= 200 and status < 300 then
    local id = string.match(body, '"bench (%d+)"')
    if id then table.insert(acks, id) end
  end
end
`;
}

export async function wrk(run: WrkRun): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-wrk-'));
  try {
    const out = join(dir, 'result');
    writeFileSync(join(dir, 'script.lua'), run.script === undefined ? script(run, out) : run.script(out));
    const args = ['-t1', `-c${run.connections}`, `-d${run.seconds}s`, '--timeout', '10s', '-s', join(dir, 'script.lua'), run.url];
    const child = spawn('wrk', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`wrk exited with ${code}: ${stderr}`);
    const [first = '', ...ids] = readFileSync(out, 'utf8').trimEnd().split('\n');
    const r = JSON.parse(first) as { requests: number; us: number; p50: number; p99: number; errors: number };
    return {
      requests: r.requests,
      rps: r.requests / (r.us / 1e6),
      p50: r.p50 / 1000,
      p99: r.p99 / 1000,
      errors: r.errors,
      acknowledged: ids.filter(Boolean).map(Number),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU time (user + system) the process has used so far, in microseconds (Linux /proc, 100 ticks/s). */
export function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based), so indexes 11 and 12 here.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
