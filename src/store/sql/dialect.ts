import type { Scope } from '../../domain/principal.js';

/**
 * The SQL dialects a store speaks, described once, and the tag their shared statements are written with.
 * As platformatic sql-mapper's `sql` tag binds values, a statement names each value where it goes
 * (`param('id')`), once for both dialects; rendering it for a dialect numbers the placeholders
 * (PostgreSQL's `$1`, a name used twice keeping its number; SQLite's `?` for each use, the value bound
 * again) and gives the order of the values. A backend renders a statement once, when it prepares it, never
 * per request.
 */

/** The backends, as everything else names them (migrations/<name>/, the doctor's report). */
export type DialectName = 'sqlite' | 'postgres';

/** A value a statement takes when it runs: its name, and its PostgreSQL type where the statement does not imply one. */
export class Param {
  constructor(
    readonly name: string,
    readonly pgType: string | undefined,
  ) {}
}

/** A piece of SQL: text, and the values it takes where they go. */
export class Sql {
  constructor(readonly chunks: readonly (string | Param)[]) {}
}

export type Part = Sql | Param;

/** SQL text with values (`param`) and other SQL (`sql`, `raw`) in it; nothing else may go in. */
export function sql(strings: TemplateStringsArray, ...parts: readonly Part[]): Sql {
  const chunks: (string | Param)[] = [];
  strings.forEach((text, i) => {
    chunks.push(text);
    const part = parts[i];
    if (part instanceof Param) chunks.push(part);
    else if (part !== undefined) chunks.push(...part.chunks);
  });
  return new Sql(chunks);
}

/** SQL written as text (a column, an expression made from a definition): never a value from outside. */
export function raw(text: string): Sql {
  return new Sql([text]);
}

export function param(name: string, pgType?: string): Param {
  return new Param(name, pgType);
}

/** `parts` one after the other, `separator` between them. */
export function join(parts: readonly Part[], separator: string): Sql {
  return new Sql(parts.flatMap((part, i) => [...(i === 0 ? [] : [separator]), ...(part instanceof Param ? [part] : part.chunks)]));
}

/** A statement rendered for one dialect: its text, and the names of its values in the order it takes them. */
export interface Statement {
  readonly text: string;
  readonly names: readonly string[];
  /** The values in order, from values by name (a name the statement takes and `args` lacks is an error). */
  values(args: Readonly<Record<string, unknown>>): unknown[];
}

export function render(d: Dialect, statement: Sql): Statement {
  let text = '';
  const names: string[] = [];
  const numbers = new Map<string, number>();
  for (const chunk of statement.chunks) {
    if (typeof chunk === 'string') {
      text += chunk;
      continue;
    }
    let n = d.numbered ? numbers.get(chunk.name) : undefined;
    if (n === undefined) {
      n = names.push(chunk.name);
      numbers.set(chunk.name, n);
    }
    text += d.placeholder(n, chunk.pgType);
  }
  return {
    text,
    names,
    values: (args) => names.map((name) => {
      if (!(name in args)) throw new Error(`no value for ${name} in ${text}`);
      return args[name];
    }),
  };
}

/**
 * A piece of SQL that takes no value, as text, for a statement a backend writes in its own dialect only
 * (one whose own placeholders it numbers itself).
 */
export function valueless(d: Dialect, piece: Sql): string {
  const { text, names } = render(d, piece);
  if (names.length > 0) throw new Error(`a piece of SQL written into another takes values (${names.join(', ')}): ${text}`);
  return text;
}

/**
 * What differs between the dialects, for what both run (sql/): placeholders and casts, the value codecs,
 * a few expressions. A backend keeps its driver, batching, transactions and error codes.
 */
export interface Dialect {
  readonly backend: DialectName;
  /** Whether placeholders are numbered (a value used twice is bound once) or each its own. */
  readonly numbered: boolean;
  /** The placeholder of the `i`-th value (from 1), cast to `pgType` where the dialect needs it. */
  placeholder(i: number, pgType: string | undefined): string;
  /** The column type of a point in time (schema_migrations.applied_at). */
  readonly timeType: string;
  /** A point in time, a token's scopes and a flag as the backend stores them, and back. */
  time(date: Date): unknown;
  dateOf(stored: unknown): Date;
  scopes(scopes: readonly Scope[]): unknown;
  scopesOf(stored: unknown): readonly string[];
  flag(value: boolean): unknown;
  flagOf(stored: unknown): boolean;
  /**
   * What an INSERT says, before VALUES or SELECT, to give an identity column a value of its own (an
   * import keeping a token's id): PostgreSQL's OVERRIDING SYSTEM VALUE; nothing in SQLite.
   */
  readonly explicitIdentity: string;
  /** A stored flag's true. */
  readonly true: Sql;
  /**
   * The current time: on SQLite a value (`now`, in milliseconds, as every SQLite time is made), so that a
   * statement's times all agree; PostgreSQL's now().
   */
  readonly now: Part;
  /** The current time in milliseconds, as a number (an event id's time). */
  readonly nowMs: Part;
  /** `ms` milliseconds after the time `time`. */
  after(time: Part, ms: Part): Sql;
  /** count(*) as a number: PostgreSQL's bigint comes as text from node-postgres, an int does not. */
  readonly count: Sql;
}

const NOW = param('now');

/** SQLite's spelling: `?` placeholders, times as milliseconds since the epoch, scopes space-separated, flags 0/1. */
export const SQLITE: Dialect = {
  backend: 'sqlite',
  numbered: false,
  placeholder: () => '?',
  timeType: 'INTEGER',
  time: (date) => date.getTime(),
  dateOf: (stored) => new Date(stored as number),
  scopes: (scopes) => scopes.join(' '),
  scopesOf: (stored) => (stored as string).split(' '),
  flag: (value) => (value ? 1 : 0),
  flagOf: (stored) => stored === 1,
  explicitIdentity: '',
  true: raw('1'),
  now: NOW,
  nowMs: NOW,
  after: (time, ms) => sql`${time} + ${ms}`,
  count: raw('count(*)'),
};

/** PostgreSQL's spelling: `$i` placeholders; the driver maps times, arrays and booleans itself. */
export const POSTGRES: Dialect = {
  backend: 'postgres',
  numbered: true,
  placeholder: (i, pgType) => (pgType === undefined ? `$${i}` : `$${i}::${pgType}`),
  timeType: 'timestamptz',
  time: (date) => date,
  dateOf: (stored) => stored as Date,
  scopes: (scopes) => scopes,
  scopesOf: (stored) => stored as string[],
  flag: (value) => value,
  flagOf: (stored) => stored as boolean,
  explicitIdentity: 'OVERRIDING SYSTEM VALUE',
  true: raw('true'),
  now: raw('now()'),
  nowMs: raw('(extract(epoch FROM clock_timestamp()) * 1000)::bigint'),
  after: (time, ms) => sql`${time} + ${ms} * interval '1 millisecond'`,
  count: raw('count(*)::int'),
};
