import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { ROOT } from './checkout.js';

/** The installed command, as `npx plantstore` runs it (dist/ is built by `npm test` first). */
export const BIN = join(ROOT, 'bin/plantstore.js');

type Env = Record<string, string | undefined>;

/** This process's environment with `overrides` applied; an undefined value removes the variable. */
export function environment(overrides: Env): NodeJS.ProcessEnv {
  const env = { ...process.env, ...overrides };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  return env;
}

export interface LogLine {
  readonly level: number;
  readonly time: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** The JSON log lines of `out`; a line that is not JSON fails the test (every line the server writes is one). */
export function logLines(out: string): LogLine[] {
  return out.split('\n').filter(Boolean).map((line) => JSON.parse(line) as LogLine);
}

/** pino's number for fatal: the one line a failed start-up logs. */
export const FATAL = 60;

/** The messages of the fatal lines of `out`, one a line ('' when there are none). */
export function fatalMessages(out: string): string {
  return logLines(out).filter((l) => l.level === FATAL).map((l) => l.msg).join('\n');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A CLI command that has not ended by then is a hang (a test expecting an error got a server). */
const CLI_HANG_MS = 60_000;

export interface RunOptions {
  /** Past this, the process counts as hung and is killed. */
  readonly hangMs?: number;
  /** How it is killed then; SIGKILL for a process that may ignore SIGTERM. */
  readonly killSignal?: NodeJS.Signals;
}

/**
 * Waits for `child` to end; what it wrote to its piped stdout and stderr, decoded as UTF-8 across chunks
 * (a character split between two reads arrives whole).
 */
export async function outputOf(child: ChildProcess): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

export async function runCli(
  args: string[], env: Env = {}, cwd?: string, { hangMs = CLI_HANG_MS, killSignal = 'SIGTERM' }: RunOptions = {},
): Promise<CliResult> {
  return outputOf(spawn(process.execPath, [BIN, ...args], { env: environment(env), cwd, stdio: 'pipe', timeout: hangMs, killSignal }));
}

export interface ServerProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything the process wrote to stdout so far (JSON log lines). */
  logs(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
}

export interface SpawnedServer extends Omit<ServerProcess, 'url'> {
  /** Resolves with the URL once the server listens (its store may still be opening). */
  readonly listening: Promise<string>;
  /** Resolves with the URL once the store is open too ("plantstore ready"); rejects if it exits first. */
  readonly ready: Promise<string>;
  /** Everything written to stderr so far. */
  errors(): string;
  /** The messages of the fatal log lines so far (why start-up failed), one a line. */
  fatal(): string;
}

/** Spawns `plantstore serve` on a free port, without waiting for it to listen; `bin`: another installed copy's. */
export function spawnServer(t: TestContext, env: Env, cwd?: string, bin: string = BIN): SpawnedServer {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0'], {
    env: environment({ LOG_LEVEL: 'info', ...env }),
    cwd,
    stdio: 'pipe',
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const waitFor = (what: string, line: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const look = () => {
        const url = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1];
        if (url && line.test(out)) resolve(url);
      };
      child.stdout.on('data', look);
      void exited.then((code) => reject(new Error(`server exited with ${code} before ${what}: ${err}${out}`)));
    });
  child.stdout.on('data', (d) => (out += d));
  const listening = waitFor('listening', /Server listening/);
  const ready = waitFor('being ready', /"msg":"plantstore ready"/);
  // A test that expects the process to exit awaits `exited` instead.
  listening.catch(() => undefined);
  ready.catch(() => undefined);
  return {
    child,
    listening,
    ready,
    exited,
    logs: () => out,
    errors: () => err,
    fatal: () => fatalMessages(out),
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      return exited;
    },
  };
}

/** Starts `plantstore serve` on a free port and resolves once it is ready to serve. */
export async function startServer(t: TestContext, env: Env, cwd?: string): Promise<ServerProcess> {
  const server = spawnServer(t, env, cwd);
  return { ...server, url: await server.ready };
}
