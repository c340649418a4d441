import { execFileSync, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, chownSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestContext } from 'node:test';
import { testDatabase } from './app.js';
import { BIN, runCli, startServer } from './process.js';

/**
 * The tests run as root, which may write any file whatever its mode; a store or lock file the server
 * "cannot write" needs the server to run as somebody else.
 */
export const NOBODY = {
  uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })),
  gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })),
};

/** A fresh directory (removed after the test), owned by `nobody` when asked. */
export function tempDir(t: TestContext, owner?: typeof NOBODY): string {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-sqlite-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  return dir;
}

export interface Served {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves with the URL once the server listens; rejects if it exits first. */
  readonly listening: Promise<string>;
}

export interface ServeOptions {
  /** Run as this user instead of root. */
  readonly as?: typeof NOBODY;
  /** A soft limit on the size of any file the server writes (RLIMIT_FSIZE, in 512-byte blocks): a disk that fills up. */
  readonly fileSizeBlocks?: number;
}

/**
 * How `as` runs node and this checkout's `bin/plantstore.js` when another user may not reach them along
 * their paths (a checkout cloned inside a private folder, mode 700, as `mktemp -d` and home folders are;
 * node installed under a home folder): this process (root) opens node and the checkout's folder, the
 * server inherits them as fds 4 and 3, and the kernel follows /proc/self/fd/N straight to what it
 * names, checking only the folders below it. Node must keep those paths rather than resolve them to the
 * real ones (which the other user cannot reach): hence --preserve-symlinks, for the main module and for
 * what it imports. No copy, and nobody's folders change mode.
 */
const CHECKOUT = dirname(dirname(BIN));
const NODE = '/proc/self/fd/4';
const THROUGH_FDS = ['--preserve-symlinks', '--preserve-symlinks-main', join('/proc/self/fd/3', relative(CHECKOUT, BIN))];

/** `plantstore serve --port 0`, like test/helpers/process.ts spawnServer, as another user or with a file size limit. */
export function serve(t: TestContext, env: Record<string, string>, { as, fileSizeBlocks }: ServeOptions = {}): Served {
  const [node, args] = as ? [NODE, [...THROUGH_FDS, 'serve', '--port', '0']] : [process.execPath, [BIN, 'serve', '--port', '0']];
  const environment = { ...process.env, LOG_LEVEL: 'info', ...env };
  const fds = as ? [openSync(CHECKOUT, 'r'), openSync(process.execPath, 'r')] : [];
  const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', ...fds];
  // sh's ulimit sets the limit for the process it then becomes (exec); Node ignores SIGXFSZ, so a write
  // past the limit fails with EFBIG instead of killing the process.
  const child: ChildProcess =
    fileSizeBlocks === undefined
      ? spawn(node, args, { env: environment, stdio, ...as })
      : spawn('sh', ['-c', `ulimit -S -f ${fileSizeBlocks} && exec "$0" "$@"`, node, ...args], { env: environment, stdio, ...as });
  // The server holds its own copies of the descriptors from here on.
  for (const fd of fds) closeSync(fd);
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const listening = new Promise<string>((resolve, reject) => {
    const look = () => {
      const url = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1];
      if (url) resolve(url);
    };
    child.stdout?.on('data', look);
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening: ${out}`)));
  });
  listening.catch(() => undefined);
  return { child, exited, output: () => out, listening };
}

/** A start-up that fails must end by itself: the exit code, or 'still running' after `ms` (a hang). */
export function exitCode(exited: Promise<number | null>, ms = 15_000): Promise<number | null | 'still running'> {
  return Promise.race([exited, sleep(ms, undefined, { ref: false }).then(() => 'still running' as const)]);
}

export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Headers;
  /** Milliseconds from sending the request to the end of the answer. */
  readonly ms: number;
}

export async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(url, init);
  const body = await res.text();
  return { status: res.status, body, headers: res.headers, ms: performance.now() - started };
}

/** The numeric `error` of an Error body, or undefined. */
export function errorCode(answer: Answer): number | undefined {
  try {
    return (JSON.parse(answer.body) as { error?: number }).error;
  } catch {
    return undefined;
  }
}

/**
 * A real `plantstore serve` on a fresh SQLite file, with a token of alice's (made by the CLI, as a user
 * would) and calls that use it.
 */
export async function servedSqlite(t: TestContext) {
  const { url } = await testDatabase(t);
  const env = { DATABASE_URL: url };
  const token = (await runCli(['token', 'create', '--user', 'alice'], env)).stdout.trim();
  const server = await startServer(t, env);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const create = (id: number) => call(`${server.url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name: `p${id}` }) });
  const list = () => call(`${server.url}/plants`, { headers });
  const ready = () => call(`${server.url}/readyz`);
  return { env, path: url.slice('sqlite:'.length), server, create, list, ready };
}
