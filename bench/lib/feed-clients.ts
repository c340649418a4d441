// The feed scenario's two clients, as the bench's process sees them: the subscriber process
// (bench/servers/feed-subscribers.ts, driven over IPC) and the paced creator, which runs here, in a
// process otherwise idle during its phase, so that each 200 is stamped as it arrives.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Collected, Command, Loop, Opened, Settled } from '../servers/feed-subscribers.js';
import { monotonicMs } from './feed.js';
import type { System } from './systems.js';

const SUBSCRIBERS_FILE = fileURLToPath(new URL('../servers/feed-subscribers.ts', import.meta.url));

export interface Subscribers extends System {
  open(url: string, tokens: readonly string[], count: number): Promise<Opened>;
  /** Counts restart; with `record`, every created event's arrival is kept, per plant and stream. */
  mark(record: boolean): Promise<void>;
  /**
   * Until every stream has had the event of each of `ids` (recording) or `expected` created events
   * (counting), or none came for `quietMs`, or `timeoutMs` passed.
   */
  settle(expected: number, ids: readonly string[] | undefined, timeoutMs: number, quietMs: number): Promise<Settled>;
  collect(): Promise<Collected>;
  close(): Promise<void>;
  loop(): Promise<Loop>;
}

/** Starts the subscriber process; it holds no stream until `open`. */
export async function startSubscribers(): Promise<Subscribers> {
  // 'advanced': the arrivals come back as Float64Arrays, not as JSON arrays of numbers.
  const child: ChildProcess = fork(SUBSCRIBERS_FILE, [], { execArgv: ['--import', 'tsx'], serialization: 'advanced', stdio: 'inherit' });
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the subscriber process exited with ${code} before it was ready`)));
    child.on('message', (message: { ready?: boolean; id?: number; result?: unknown; error?: string }) => {
      if (message.ready) return resolve();
      const w = waiting.get(message.id as number);
      waiting.delete(message.id as number);
      if (message.error !== undefined) w?.reject(new Error(`subscriber process: ${message.error}`));
      else w?.resolve(message.result);
    });
  });
  child.once('exit', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`the subscriber process exited with ${code}`));
    waiting.clear();
  });
  await ready;
  const send = <T>(command: Command): Promise<T> => new Promise<T>((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
    child.send({ id, command });
  });
  return {
    name: 'feed subscribers', url: '', pid: child.pid as number,
    open: (url, tokens, count) => send<Opened>({ cmd: 'open', url, tokens: [...tokens], count }),
    mark: (record) => send<void>({ cmd: 'mark', record }),
    settle: (expected, ids, timeoutMs, quietMs) => send<Settled>({ cmd: 'settle', expected, ids: ids && [...ids], timeoutMs, quietMs }),
    collect: () => send<Collected>({ cmd: 'collect' }),
    close: () => send<void>({ cmd: 'close' }),
    loop: () => send<Loop>({ cmd: 'loop' }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.disconnect();
      await once(child, 'exit');
    },
  };
}

export interface Paced {
  /** Each plant id answered 200 (as text) and when the answer arrived (monotonicMs). */
  readonly acks: Map<string, number>;
  readonly sent: number;
  /** Answers other than 200, and requests that failed. */
  readonly failed: number;
  /** Creates sent later than their time by more than one interval: the creator fell behind. */
  readonly late: number;
}

/**
 * Creates at `rate` a second for `seconds`, ids from `firstId`, each sent at its time whether or not
 * the ones before were answered (open loop: a slow answer delays no other create). A 200 is stamped
 * when its head arrives, before its body is read.
 */
export async function pacedCreates(url: string, token: string, firstId: number, rate: number, seconds: number): Promise<Paced> {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const { hostname, port } = new URL(url);
  const acks = new Map<string, number>();
  const interval = 1000 / rate;
  const total = Math.max(1, Math.round(rate * seconds));
  const answered: Array<Promise<void>> = [];
  let failed = 0;
  let late = 0;
  const create = (id: string) => new Promise<void>((resolve) => {
    const body = `{"id":${id},"name":"feed ${id}"}`;
    const req = request({
      host: hostname, port, agent, method: 'POST', path: '/plants',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const t = monotonicMs();
      if (res.statusCode === 200) acks.set(id, t);
      else failed++;
      res.resume();
      res.on('end', resolve);
      res.on('error', resolve);
    });
    req.on('error', () => {
      failed++;
      resolve();
    });
    req.end(body);
  });
  const start = monotonicMs();
  for (let k = 0; k < total; k++) {
    const due = start + k * interval;
    const wait = due - monotonicMs();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    else if (-wait > interval) late++;
    answered.push(create(String(firstId + k)));
  }
  await Promise.all(answered);
  agent.destroy();
  return { acks, sent: total, failed, late };
}
