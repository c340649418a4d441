// What a command reads and writes besides its arguments, given to it rather than taken from the process:
// bin/plantstore.js passes the process's own, a test passes its streams, environment and working
// directory and runs the command in its own process. A command reads no process.env nor process.cwd(),
// writes through no console, and never exits; main returns the exit code.

/**
 * Where a command writes: process.stdout or stderr, or a test's stream. A terminal is known by the
 * stream's own isTTY (tty.WriteStream sets it; a pipe, a file or a test's stream has none), its width by
 * columns. fd, when the stream has one, lets a logger write to the descriptor directly, as pino does best.
 */
export type Output = NodeJS.WritableStream & { readonly isTTY?: boolean; readonly columns?: number; readonly fd?: number };

/** What main is given besides the arguments. */
export interface CliIo {
  /** The variables the settings are read from (DATABASE_URL, PLANTSTORE_CONFIG, ...); never written. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: Output;
  readonly stderr: Output;
  /**
   * What `import -` reads, asked for only then: a process that touches its stdin makes a handle for it,
   * and no other command needs one. Without it, `import -` reads nothing (an empty file).
   */
  readonly stdin?: () => NodeJS.ReadableStream;
  /**
   * The working directory: what every relative path is relative to (the default store, --config, export
   * and import files, backup's --out). bin/plantstore.js gives the process's own; a test, a directory of
   * its own, so that a command it runs in its own process needs no process of its own to have one.
   */
  readonly cwd: string;
}

/** What each command is given: main's streams and environment, with a line writer for each stream. */
export interface Cli extends CliIo {
  /** A line on stdout, as console.log wrote it. */
  print(line: string): void;
  /** A line on stderr, as console.error wrote it. */
  warn(line: string): void;
}

export function cliOf(io: CliIo): Cli {
  return {
    ...io,
    print: (line) => void io.stdout.write(`${line}\n`),
    warn: (line) => void io.stderr.write(`${line}\n`),
  };
}

/** Said already, as a log line (`serve`): main prints nothing more, and exits with this code. */
export class LoggedError extends Error {
  constructor(readonly exitCode: number) {
    super('logged');
  }
}
