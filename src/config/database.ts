import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './error.js';
import { postgresPlace, postgresUrlProblem } from '../domain/database-url.js';

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

// The value may hold a password, so it is not repeated in the message.
export const DATABASE_URL_REFUSAL = 'DATABASE_URL must start with sqlite:, postgres:// or postgresql://';

export function parseDatabaseUrl(value: string): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length);
    if (path === '' || path === ':memory:') {
      throw new ConfigError('DATABASE_URL sqlite: needs a file path (an in-memory store would not be durable)');
    }
    return { kind: 'sqlite', path: isAbsolute(path) ? path : resolve(path) };
  }
  if (!/^postgres(ql)?:\/\//.test(value)) throw new ConfigError(DATABASE_URL_REFUSAL);
  // Checked with the other settings, so that a URL node-postgres cannot read ends start-up before
  // anything listens or connects (node-postgres itself would say so only at the first connection).
  const problem = postgresUrlProblem(value);
  if (problem) throw new ConfigError(`DATABASE_URL${problem.startsWith('is ') ? ' ' : ': '}${problem}`);
  return { kind: 'postgres', url: value };
}

/**
 * How a message names a store, never with a password. Two phrasings, each kept where users know it:
 * - 'url', the CLI's ("using sqlite:/…/plantstore.db"): the store as DATABASE_URL names it, a PostgreSQL
 *   URL with every password masked (its own, and node-postgres's password= and sslpassword= parameters);
 * - 'place', the server's log lines and start-up errors: the SQLite file's path, or
 *   "PostgreSQL at host:port/database".
 */
export function describeStore(database: DatabaseConfig, style: 'url' | 'place'): string {
  if (database.kind === 'sqlite') return style === 'url' ? `sqlite:${database.path}` : database.path;
  if (style === 'place') return `PostgreSQL at ${postgresPlace(database.url)}`;
  let url: URL;
  try {
    url = new URL(database.url);
  } catch {
    return `${database.url.slice(0, database.url.indexOf(':'))}://… (unparsable URL, not shown: it may hold a password)`;
  }
  if (url.password !== '') url.password = '***';
  for (const name of [...url.searchParams.keys()]) if (/password/i.test(name)) url.searchParams.set(name, '***');
  return url.toString();
}
