import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * The process's one logger: JSON lines on stdout, shared by the HTTP layer and the store.
 *
 * Writes are asynchronous: under load, lines written while the previous write is in flight go out
 * together, one syscall for many lines, and a slow reader of stdout (a pipe, a log shipper) delays logs
 * instead of stalling requests. A quiet server still writes each line at once. pino flushes what is
 * buffered when the process exits.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level }, destination ?? pino.destination({ dest: 1, sync: false }));
}
