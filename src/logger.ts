import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { LogFormatSetting } from './config/values.js';

export type LogFormat = 'json' | 'pretty';

/** auto: a person is watching a terminal, so pretty; anything else (a pipe, a file, a log shipper) gets JSON. */
export function logFormatFor(setting: LogFormatSetting, isTerminal: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return isTerminal ? 'pretty' : 'json';
}

/**
 * pino's numeric `level` (what log tools filter on) and an ISO 8601 `time`, readable by a person and
 * unambiguous to a machine; the line is otherwise pino's, serializers and all.
 */
function options(level: string): LoggerOptions {
  return { level, timestamp: pino.stdTimeFunctions.isoTime };
}

/**
 * JSON lines on `destination`, by default stdout.
 *
 * Writes are asynchronous: under load, lines written while the previous write is in flight go out
 * together, one syscall for many lines, and a slow reader of stdout (a pipe, a log shipper) delays logs
 * instead of stalling requests. A quiet server still writes each line at once. pino.destination flushes
 * what is buffered when the process exits, process.exit() included, so a fatal line just before exit
 * is written.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(options(level), destination ?? pino.destination({ dest: 1, sync: false }));
}

/**
 * Each JSON line pino makes, turned readable by pino-pretty before it reaches `out`: time, level name,
 * message, then the other fields. In this thread and synchronously, rather than through pino-pretty's
 * stream or a transport worker, so that a line is in `out` (and flushed with it at exit) as soon as it is
 * logged. Since it reads what pino wrote, it shows nothing the JSON line leaves out (it drops `hostname`).
 */
export function prettyDestination(out: DestinationStream, colour: boolean): DestinationStream {
  const prettify = prettyFactory({ colorize: colour, translateTime: 'SYS:standard' });
  return { write: (line: string) => void out.write(prettify(line)) };
}

/** A stream a logger writes to: process.stdout or stderr (with their descriptor), or any other writable. */
export interface LogStream {
  write(line: string): unknown;
  readonly isTTY?: boolean;
  readonly fd?: number;
}

/**
 * A logger on `stream` in the format LOG_FORMAT asks for, colours only on a terminal: the server's, on
 * stdout, asynchronously; the CLI's commands, whose stdout is their output, log on stderr, synchronously,
 * so that their lines keep their place among the command's own messages there. A stream with a
 * descriptor (the process's own) is written through pino.destination, which batches and flushes at exit;
 * any other (a test's) line by line. The JSON path is createLogger's, with nothing in between.
 */
export function streamLogger(level: string, setting: LogFormatSetting, stream: LogStream, { sync = false }: { sync?: boolean } = {}): Logger {
  const terminal = stream.isTTY === true;
  const out: DestinationStream = typeof stream.fd === 'number' ? pino.destination({ dest: stream.fd, sync }) : { write: (line) => void stream.write(line) };
  if (logFormatFor(setting, terminal) === 'json') return createLogger(level, out);
  return createLogger(level, prettyDestination(out, terminal));
}
