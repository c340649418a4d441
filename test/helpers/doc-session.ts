import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { ROOT } from './checkout.js';
import { BIN } from './process.js';

/**
 * A reader's shell for the docs examples: one bash, in a fresh folder, into which a page's shell blocks
 * are typed one step at a time, so that variables set by one block are there for the next, as in a
 * terminal. Blocks that keep running (a server, a receiver) run in the background, each as in a
 * terminal of its own, with their output in a log file. Everything it starts is in one process group,
 * which stop() ends.
 */

/** A free TCP port on loopback, for a variable the page reads (PORT, RECEIVER_PORT…). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The commands a page may run that are not on every machine: `npx plantstore` and `plantstore` run this
 * checkout's built CLI; `npm start` serves it (its prestart build is done: npm test built dist/ first);
 * `npm install` of a folder or of a package this checkout has installed links it, as npm does for a
 * folder. Anything else of npm or npx fails, so no example reaches the npm registry.
 */
function writeCommands(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const node = process.execPath;
  const script = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    chmodSync(join(dir, name), 0o755);
  };
  script('plantstore', `#!/bin/sh\nexec '${node}' '${BIN}' "$@"\n`);
  script(
    'npx',
    `#!/bin/sh\nif [ "$1" = plantstore ]; then shift; exec '${node}' '${BIN}' "$@"; fi\n` +
      `echo "docs test: npx $* is not available here (nothing is fetched from the npm registry)" >&2\nexit 127\n`,
  );
  script(
    'npm',
    `#!/bin/sh\nif [ "$1" = start ] && [ $# -eq 1 ]; then exec '${node}' '${BIN}' serve; fi\n` +
      `if [ "$1" = install ] && [ $# -gt 1 ]; then shift; exec '${node}' '${join(dir, 'npm-install.cjs')}' "$@"; fi\n` +
      `echo "docs test: npm $* is not available here (nothing is fetched from the npm registry)" >&2\nexit 127\n`,
  );
  writeFileSync(
    join(dir, 'npm-install.cjs'),
    `const { existsSync, mkdirSync, readFileSync, symlinkSync } = require('node:fs');
const { dirname, join, resolve } = require('node:path');
for (const arg of process.argv.slice(2)) {
  const folder = existsSync(join(arg, 'package.json')) ? resolve(arg) : join(${JSON.stringify(ROOT)}, 'node_modules', arg);
  if (!existsSync(join(folder, 'package.json'))) {
    console.error('docs test: npm install ' + arg + ': neither a folder with a package.json nor a package the checkout has');
    process.exit(127);
  }
  const name = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')).name;
  mkdirSync(dirname(join('node_modules', name)), { recursive: true });
  if (!existsSync(join('node_modules', name))) symlinkSync(folder, join('node_modules', name));
  console.error('docs test: linked node_modules/' + name + ' to ' + folder);
}
`,
  );
}

/** `$NAME` and `${NAME:-default}` of `text`, from `env`, as bash would expand them. */
export function expand(text: string, env: Readonly<Record<string, string | undefined>>): string {
  return text.replace(/\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)/g, (_, braced: string, fallback: string | undefined, bare: string) => {
    const value = env[braced ?? bare];
    return value !== undefined && value !== '' ? value : (fallback ?? '');
  });
}

export interface StepResult {
  readonly stdout: string;
}

/** Long enough for a CLI command on a loaded 2-core machine; each bounds one step, none the page. */
const STEP_TIMEOUT_MS = 90_000;

export class DocSession {
  readonly #shell: ChildProcessWithoutNullStreams;
  readonly #dir: string;
  readonly #env: Readonly<Record<string, string>>;
  readonly #backgrounds: Array<{ pid: number; log: string; ended: boolean }> = [];
  readonly #streams = new Map<string, { pid: number; log: string }>();
  readonly #exit: Promise<number | null>;
  #out = '';
  #err = '';
  #steps = 0;
  /** Called with each chunk of the shell's stdout, and once with null when the shell ends. */
  #watch: ((chunk: string | null) => void) | null = null;

  /** A shell in `dir` (the reader's folder) with `env`; the commands above come first on its PATH. */
  constructor(dir: string, env: Record<string, string>) {
    const bin = join(dir, '..', 'bin');
    writeCommands(bin);
    mkdirSync(join(dir, '..', 'logs'), { recursive: true });
    this.#dir = dir;
    this.#env = { ...env, PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    this.#shell = spawn('bash', ['--noprofile', '--norc'], { cwd: dir, env: this.#env, detached: true, stdio: 'pipe' });
    this.#shell.stdout.setEncoding('utf8').on('data', (d: string) => {
      this.#out += d;
      this.#watch?.(d);
    });
    this.#shell.stderr.setEncoding('utf8').on('data', (d: string) => (this.#err += d));
    this.#exit = new Promise((resolve) => this.#shell.on('close', (code) => {
      this.#watch?.(null);
      resolve(code);
    }));
    // A command that fails, a variable used before it is set, a failing stage of a pipe: the page is wrong.
    this.#shell.stdin.write('set -euo pipefail\n');
  }

  get env(): Readonly<Record<string, string>> {
    return this.#env;
  }

  /** What the shell and the background blocks wrote to stderr and their logs, for a failure's message. */
  diagnostics(): string {
    const logs = this.#backgrounds.map(({ log }, i) => `--- background ${i + 1} (${log}):\n${tail(readText(log))}`);
    return [`--- stderr:\n${tail(this.#err)}`, ...logs].join('\n');
  }

  /** Types `commands` (stdin from /dev/null, so no command reads the next ones) and waits for them to end. */
  async run(commands: string): Promise<StepResult> {
    const id = ++this.#steps;
    const mark = `\x1edocs-step-${id}\x1e`;
    const from = this.#out.length;
    const ended = this.#until(() => this.#out.includes(mark, from), `the step ${JSON.stringify(commands)}`);
    this.#shell.stdin.write(`{\n${commands}\n} < /dev/null\nprintf '\\n\\036docs-step-%d\\036\\n' ${id}\n`);
    await ended;
    return { stdout: this.#out.slice(from, this.#out.indexOf(mark, from)) };
  }

  /** Runs `commands` as in another terminal and waits until `url` (expanded from the environment) answers. */
  async background(commands: string, url: string): Promise<void> {
    const { pid, log } = await this.#another(commands);
    const target = expand(url, this.#env);
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    // Polled: nothing tells when another process starts listening but its answer.
    for (;;) {
      try {
        await fetch(target, { signal: AbortSignal.timeout(2000) });
        return;
      } catch {
        if (!alive(pid)) throw new Error(`the background block ended before ${target} answered:\n${readText(log)}`);
        if (Date.now() > deadline) throw new Error(`${target} did not answer within ${STEP_TIMEOUT_MS} ms:\n${readText(log)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /**
   * Runs `commands` as in another terminal, `name` naming what it prints (a stream: curl -N of the feed),
   * which streamed() waits for.
   */
  async stream(commands: string, name: string): Promise<void> {
    if (this.#streams.has(name)) throw new Error(`a stream named ${name} runs already`);
    // Its stdout alone is what the page shows (curl's progress meter, on stderr, is not shown in a terminal).
    this.#streams.set(name, await this.#another(commands, true));
  }

  /**
   * Waits until `found` finds what it looks for in what the stream `name` has printed so far, and returns
   * what it returned. Polled: another process writes the log, and nothing says when.
   */
  async streamed<T>(name: string, found: (printed: string) => T | undefined): Promise<T> {
    const stream = this.#streams.get(name);
    if (stream === undefined) throw new Error(`no stream named ${name} was started before`);
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      const printed = readText(stream.log);
      const value = found(printed);
      if (value !== undefined) return value;
      const said = () => `it printed:\n${tail(printed)}\n--- and on stderr:\n${tail(readText(`${stream.log}.stderr`))}`;
      if (!alive(stream.pid)) throw new Error(`the stream ${name} ended; ${said()}`);
      if (Date.now() > deadline) throw new Error(`the stream ${name} did not print it within ${STEP_TIMEOUT_MS} ms; ${said()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Starts `commands` as in another terminal, its output in a log of its own (stderr apart, with `apart`). */
  async #another(commands: string, apart = false): Promise<{ pid: number; log: string }> {
    const log = join(this.#dir, '..', 'logs', `background-${this.#backgrounds.length + 1}.log`);
    const stderr = apart ? `'${log}.stderr'` : '&1';
    // Job control (set -m) for this one job: it gets a process group of its own, as in a terminal of its
    // own, so that interrupt() can stop it and all it started, and nothing else.
    const { stdout } = await this.run(`set -m\n(\n${commands}\n) < /dev/null > '${log}' 2>${stderr} &\necho "$!"\nset +m`);
    const pid = Number(stdout.trim());
    this.#backgrounds.push({ pid, log, ended: false });
    return { pid, log };
  }

  /** Saves `text` as the file `name` in the reader's folder. */
  save(name: string, text: string): void {
    writeFileSync(join(this.#dir, name), `${text}\n`);
  }

  /**
   * What a reader does with Ctrl-C in each other terminal before going on to a page that starts its own
   * server: every background block is stopped (SIGTERM: servers drain and exit, then SIGKILL for what is
   * left). Their logs stay for diagnostics().
   */
  async interrupt(): Promise<void> {
    this.#streams.clear();
    await this.#end(this.#backgrounds.filter((b) => !b.ended));
  }

  /** Ends the shell and everything it started: SIGTERM (servers drain and exit), then SIGKILL for what is left. */
  async stop(): Promise<void> {
    const group = -this.#shell.pid!;
    signal(group, 'SIGTERM');
    await this.#exit;
    await this.#end(this.#backgrounds.filter((b) => !b.ended));
    signal(group, 'SIGKILL');
  }

  async #end(backgrounds: Array<{ pid: number; ended: boolean }>): Promise<void> {
    for (const { pid } of backgrounds) signal(-pid, 'SIGTERM');
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && backgrounds.some(({ pid }) => alive(pid))) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const background of backgrounds) {
      signal(-background.pid, 'SIGKILL');
      background.ended = true;
    }
  }

  /** Resolves once `done()` holds, checked as the shell writes; rejects if the shell ends first or time runs out. */
  #until(done: () => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`${what} did not end within ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
      const finish = (error?: Error) => {
        clearTimeout(timer);
        this.#watch = null;
        if (error) reject(error);
        else resolve();
      };
      this.#watch = (chunk) => {
        if (chunk === null) finish(new Error(`the shell ended (a command failed) during ${what}`));
        else if (done()) finish();
      };
      if (this.#shell.exitCode !== null || this.#shell.signalCode !== null) finish(new Error(`the shell had ended before ${what}`));
    });
  }
}

/** Whether `pid` runs (a zombie, ended and not yet reaped, does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

function signal(group: number, name: NodeJS.Signals): void {
  try {
    process.kill(group, name);
  } catch {
    // The group has ended already.
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

const tail = (text: string): string => text.split('\n').slice(-40).join('\n');
