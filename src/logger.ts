import { isatty } from 'node:tty';
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

/**
 * The logger of this process in the format LOG_FORMAT asks for, colours only on a terminal: on stdout,
 * asynchronously, for the server; the CLI's commands, whose stdout is their output, log on stderr (fd 2),
 * synchronously, so that their lines keep their place among the command's own messages there. The JSON
 * path is createLogger's, with nothing in between.
 */
export function processLogger(level: string, setting: LogFormatSetting, { fd = 1, sync = false }: { fd?: 1 | 2; sync?: boolean } = {}): Logger {
  const terminal = isatty(fd);
  const out = pino.destination({ dest: fd, sync });
  if (logFormatFor(setting, terminal) === 'json') return createLogger(level, out);
  return createLogger(level, prettyDestination(out, terminal));
}
