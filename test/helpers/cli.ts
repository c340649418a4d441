import { Readable, Writable } from 'node:stream';
import { main } from '../../src/cli/index.js';
import { environment, type CliResult } from './process.js';

/** A stream that keeps what is written to it; no isTTY and no fd, as a pipe to a test would be. */
function collector(): { readonly stream: Writable; text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, encoding, done) {
      chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

export interface InProcessOptions {
  /** As runCli's: over this process's environment; an undefined value removes the variable. */
  readonly env?: Record<string, string | undefined>;
  /** What `import -` reads. */
  readonly stdin?: string | Buffer;
  /**
   * The command's working directory, what its relative paths (the default store, --config, export and
   * import files) are relative to; default: this process's.
   */
  readonly cwd?: string;
}

/**
 * Runs one command line in this process through main, as bin/plantstore.js does in its own: the same
 * result as runCli (exit code, stdout, stderr), without starting a process. The command closes what it
 * opens (its store, its timers), so nothing is left running once this resolves. Not for `serve` itself
 * (its --help and refusals are fine), nor what only a process shows: signals, a terminal, exit codes as
 * the shell sees them (test/process/).
 */
export async function cli(args: string[], { env = {}, stdin, cwd = process.cwd() }: InProcessOptions = {}): Promise<CliResult> {
  const stdout = collector();
  const stderr = collector();
  const code = await main(args, {
    env: environment(env),
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin: () => Readable.from(stdin === undefined ? [] : [Buffer.from(stdin)]),
    cwd,
  });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}
