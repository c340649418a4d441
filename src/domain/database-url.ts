import { shownUrl } from './shown.js';

/**
 * A PostgreSQL URL as node-postgres reads it (pg-connection-string): first as it is, after encoding
 * spaces and stray percent signs; then, failing that, with a stand-in host where none is given
 * (`postgres://user@/db?host=/var/run/postgresql`). Null when node-postgres could not read it either,
 * which it would only find out at the first connection, with a TypeError.
 */
export function parsePostgresUrl(value: string): URL | null {
  const text = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(value) ? encodeURI(value).replace(/%25(\d\d)/g, '%$1') : value;
  for (const candidate of [text, text.replace('@/', '@___DUMMY___/')]) {
    try {
      return new URL(candidate);
    } catch {
      // the next reading, as node-postgres tries it
    }
  }
  return null;
}

const PORT = /^[1-9]\d{0,4}$/;

function validPort(text: string): boolean {
  return PORT.test(text) && Number(text) <= 65535;
}

/**
 * What is wrong with a postgres:// URL, naming the part but never repeating the URL (it may hold a
 * password); null when node-postgres can read it. The port is checked here, where the message can say
 * so, since a URL parser only says "Invalid URL" about it.
 */
export function postgresUrlProblem(value: string): string | null {
  const url = parsePostgresUrl(value);
  if (url === null) {
    // host[:port] after the last "@" of the authority; an IPv6 address keeps its colons in brackets.
    const authority = value.replace(/^[a-z]+:\/\//i, '').split(/[?#]/)[0] ?? '';
    const hostPort = authority.slice(authority.lastIndexOf('@') + 1).split('/')[0] ?? '';
    const port = /^(?:\[[^\]]*\]|[^:]*):(.*)$/.exec(hostPort)?.[1];
    if (port !== undefined && port !== '' && !validPort(port)) return 'the port must be a whole number from 1 to 65535';
    return 'is not a URL node-postgres can read (postgres://user:password@host:port/database; characters such as / ? # @ : in the user name or password must be percent-encoded)';
  }
  if (url.port !== '' && !validPort(url.port)) return 'the port must be a whole number from 1 to 65535';
  // node-postgres lets ?port= override the URL's.
  const queryPort = url.searchParams.get('port');
  if (queryPort !== null && !validPort(queryPort)) return 'port= must be a whole number from 1 to 65535';
  return null;
}

function safelyDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** host:port/database of a URL postgresUrlProblem accepted, never the password, for messages and logs. */
export function postgresPlace(value: string): string {
  const url = parsePostgresUrl(value);
  if (url === null) return 'an unreadable URL';
  const host = url.searchParams.get('host') ?? (url.hostname === '___DUMMY___' ? '' : safelyDecoded(url.hostname));
  return `${host || 'localhost'}:${url.searchParams.get('port') ?? (url.port || '5432')}${url.pathname}`;
}

/** Where a store is: a SQLite file, or a PostgreSQL database by its URL. */
export type StoreLocation = { readonly kind: 'sqlite'; readonly path: string } | { readonly kind: 'postgres'; readonly url: string };

/**
 * How a message names a store, never with a password. Two phrasings, each kept where users know it:
 * - 'url', the CLI's ("using sqlite:/…/plantstore.db"): the store as DATABASE_URL names it, a PostgreSQL
 *   URL with every password masked (its own, node-postgres's password= and sslpassword= parameters, and
 *   other password-like parameters: shown.ts);
 * - 'place', the server's log lines and start-up errors: the SQLite file's path, or
 *   "PostgreSQL at host:port/database".
 */
export function describeStore(database: StoreLocation, style: 'url' | 'place'): string {
  if (database.kind === 'sqlite') return style === 'url' ? `sqlite:${database.path}` : database.path;
  if (style === 'place') return `PostgreSQL at ${postgresPlace(database.url)}`;
  return shownUrl(database.url);
}
