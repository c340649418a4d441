import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './error.js';
import { describeStore, postgresUrlProblem, type StoreLocation } from '../domain/database-url.js';

// Where the store is, as the configuration gives it (DATABASE_URL, parsed).
export type DatabaseConfig = StoreLocation;
export { describeStore };

// The value may hold a password, so it is not repeated in the message.
export const DATABASE_URL_REFUSAL = 'DATABASE_URL must start with sqlite:, postgres:// or postgresql://';

/** `cwd`: what a relative sqlite: path is relative to (the command's working directory). */
export function parseDatabaseUrl(value: string, cwd: string): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length);
    if (path === '' || path === ':memory:') {
      throw new ConfigError('DATABASE_URL sqlite: needs a file path (an in-memory store would not be durable)');
    }
    return { kind: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) };
  }
  if (!/^postgres(ql)?:\/\//.test(value)) throw new ConfigError(DATABASE_URL_REFUSAL);
  // Checked with the other settings, so that a URL node-postgres cannot read ends start-up before
  // anything listens or connects (node-postgres itself would say so only at the first connection).
  const problem = postgresUrlProblem(value);
  if (problem) throw new ConfigError(`DATABASE_URL${problem.startsWith('is ') ? ' ' : ': '}${problem}`);
  return { kind: 'postgres', url: value };
}

/** DATABASE_URL as doctor and `serve --help` show it: any password masked, never the text as given. */
export function showDatabaseUrl(value: string, cwd: string): string {
  try {
    return describeStore(parseDatabaseUrl(value, cwd), 'url');
  } catch {
    return '(not shown: it is refused, and may hold a password)';
  }
}
