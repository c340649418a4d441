import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rssMbOf } from './feed.js';
import type { BareAnswers } from './requests.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

export interface System {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

async function spawnUntil(name: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) resolve(m);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code} before it was ready:\n${err}${out}`)));
  });
  child.stdout?.resume();
  return { child, match };
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  };
}

export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function untilAnswers(url: string, child: ChildProcess, what: string): Promise<void> {
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    if (i > 600) throw new Error(`${what} did not start within a minute`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The bench's --profile DIR: Node's flags for a plantstore that writes a V8 CPU profile into `dir` when it stops. */
export const profileFlags = (dir: string | undefined): string[] => (dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`]);

/**
 * plantstore as users run it: the compiled CLI, `serve`, default settings but for the store and port.
 * Its log goes to a file, as in production, not to a pipe this busy process would have to drain.
 * `checkout` runs another checkout's build instead (the bench's --baseline); `nodeFlags` go to Node.
 */
export async function startPlantstore(
  name: string, databaseUrl: string, logFile: string, env: NodeJS.ProcessEnv = {}, checkout?: string, nodeFlags: readonly string[] = [],
): Promise<System> {
  const port = await freePort();
  const log = openSync(logFile, 'a');
  const bin = checkout === undefined ? root('bin/plantstore.js') : join(checkout, 'bin/plantstore.js');
  const child = spawn(process.execPath, [...nodeFlags, bin, 'serve', '--port', String(port)], {
    env: { ...process.env, DATABASE_URL: databaseUrl, ...env },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  await untilAnswers(`${url}/readyz`, child, name);
  return { name, url, pid: child.pid as number, stop: stopper(child) };
}

export async function startBare(responses: BareAnswers, forward?: string): Promise<System> {
  const env = { BARE_RESPONSES: JSON.stringify(responses), ...(forward === undefined ? {} : { BARE_FORWARD: forward }) };
  const { child, match } = await spawnUntil('bare', [root('bench/servers/bare-server.mjs')], env, /\{"port":(\d+)\}/);
  const name = forward === undefined ? 'bare node:http' : 'bare node:http + 1 POST per create';
  return { name, url: `http://127.0.0.1:${match[1]}`, pid: child.pid as number, stop: stopper(child) };
}

/** The feed scenario's bound (bench/servers/bare-feed.mjs): answers each create at once and writes its event to every stream. */
export async function startBareFeed(): Promise<System> {
  const { child, match } = await spawnUntil('bare feed', [root('bench/servers/bare-feed.mjs')], {}, /\{"port":(\d+)\}/);
  return { name: 'bare node:http fan-out', url: `http://127.0.0.1:${match[1]}`, pid: child.pid as number, stop: stopper(child) };
}

/** The webhook receiver (bench/servers/receiver.mjs): 200 to every delivery; `stats()` counts them. */
export async function startReceiver(): Promise<System & { stats(): Promise<{ received: number; unique: number }> }> {
  const { child, match } = await spawnUntil('receiver', [root('bench/servers/receiver.mjs')], {}, /\{"port":(\d+)\}/);
  const url = `http://127.0.0.1:${match[1]}`;
  return {
    name: 'webhook receiver', url, pid: child.pid as number, stop: stopper(child),
    stats: async () => (await fetch(`${url}/stats`)).json() as Promise<{ received: number; unique: number }>,
  };
}

/**
 * The bench's identity provider (bench/servers/jwks-server.mjs): a key set, and a JWT for `user` signed with its
 * key (scope plants:read); `more.users` get one each too (read and write), in `more.users`' order.
 */
export async function startJwks(
  user: string, audience: string, more?: { users: readonly string[]; file: string },
): Promise<System & { jwksUrl: string; token: string; tokens: string[] }> {
  const env = { JWT_USER: user, JWT_AUDIENCE: audience, ...(more ? { JWT_USERS: more.users.join(','), JWT_TOKENS_FILE: more.file } : {}) };
  const { child, match } = await spawnUntil('jwks', [root('bench/servers/jwks-server.mjs')], env, /\{"port":(\d+),"token":"([^"]+)"\}/);
  const url = `http://127.0.0.1:${match[1]}`;
  const tokens = more ? readFileSync(more.file, 'utf8').trimEnd().split('\n') : [];
  return { name: 'jwks', url, pid: child.pid as number, stop: stopper(child), jwksUrl: `${url}/jwks`, token: match[2] as string, tokens };
}

/** json-server 0.17, the mock users pick today, serving `dbFile`, request logging off. */
export async function startJsonServer(dbFile: string): Promise<System> {
  // json-server cannot report a port the system picked, so one is picked here.
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [root('node_modules/json-server/lib/cli/bin.js'), '--host', '127.0.0.1', '--port', String(port), '--quiet', dbFile],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  await untilAnswers(`${url}/plants?_limit=1`, child, 'json-server');
  return { name: 'json-server 0.17', url, pid: child.pid as number, stop: stopper(child) };
}

/** Peak resident memory of a process since the last reset, in MB (Linux /proc). */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]);
  return Math.round(kb / 1024);
}

/** Resident memory of a process now, in MB (Linux /proc). */
export const rssMb = (pid: number): number => rssMbOf(readFileSync(`/proc/${pid}/status`, 'utf8'));

/** Resets the peak so the next reading covers one scenario only (Linux ≥ 4.0). */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Not permitted here: the reading then covers the process's whole life, which is still an upper bound.
  }
}
