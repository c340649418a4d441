import type { FastifyBaseLogger } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];

/**
 * A request's logger (`request.log`), whose pino child (the request id bound to every line) is made the
 * first time something is logged through it. Fastify makes a child for every request, and with request
 * logging off (ACCESS_LOG=off, the default) almost no request logs anything, and making it was a visible share of a cached list's CPU
 * (pino serializes the bindings when the child is made). A line logged
 * through it is the child's line, the same as before.
 */
class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildOptions;
  #made: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #child(): FastifyBaseLogger {
    return (this.#made ??= this.#parent.child(this.#bindings, this.#options));
  }

  #log(level: Level, args: unknown[]): void {
    // pino's log functions take (object, message, ...values) or (message, ...values); passed on as given.
    (this.#child[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.#child.level;
  }

  set level(level: string) {
    this.#child.level = level;
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#log('error', args);
  }

  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }

  info(...args: unknown[]): void {
    this.#log('info', args);
  }

  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }

  silent(...args: unknown[]): void {
    this.#log('silent', args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#child.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's logger, its child made when first used. */
export function requestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options);
}
