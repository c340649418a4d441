import { EVENT_ID } from '../../domain/webhook.js';
import type { WireField } from '../../domain/wire.js';
import { raw, sql, type Dialect, type Part, type Sql } from './dialect.js';

/**
 * The SQL of each dialect that writes a wire object (domain/wire.ts) from columns, generated from its
 * one definition, so that the database's text is the JavaScript's to the byte: SQLite's json_quote and
 * PostgreSQL's to_json escape a string exactly as JSON.stringify does (quotes, backslash, control
 * characters as \b \f \n \r \t or \u00xx, the rest as it is: U+2028, non-ASCII, emoji), for every
 * string a plant may hold (no U+0000 and no unpaired surrogates: refused before they reach a store), and
 * an int64's text is its exact digits. test/store/wire.test.ts compares the bytes on both backends.
 */

/** A piece of a concatenation: literal text, or an SQL expression. */
type Piece = { readonly text: string } | { readonly sql: string };

function concat(pieces: readonly Piece[]): string {
  const merged: Piece[] = [];
  for (const piece of pieces) {
    const last = merged[merged.length - 1];
    if ('text' in piece && last !== undefined && 'text' in last) merged[merged.length - 1] = { text: last.text + piece.text };
    else merged.push(piece);
  }
  return merged.map((p) => ('text' in p ? `'${p.text.replaceAll("'", "''")}'` : p.sql)).join(' || ');
}

function value(d: Dialect, field: WireField, column: string): string {
  if (field.kind === 'int64') return column;
  return d.backend === 'sqlite' ? `json_quote(${column})` : `to_json(${column})::text`;
}

/**
 * The expression of `fields` from the columns `column(key)` names. An optional field's NULL leaves its
 * member out: PostgreSQL with coalesce (a concatenation with NULL is NULL), SQLite with a CASE per
 * optional field (its json_quote(NULL) is the text null, not NULL).
 */
export function wireJsonSql(dialect: Dialect, fields: readonly WireField[], column: (key: string) => string): string {
  if (fields[0]?.optional !== false) throw new Error('a wire object must start with a field it always has');
  if (dialect.backend === 'sqlite') {
    const optional = fields.find((f) => f.optional);
    if (optional !== undefined) {
      const without = fields.filter((f) => f !== optional);
      const with_ = fields.map((f) => (f === optional ? { ...f, optional: false } : f));
      return `CASE WHEN ${column(optional.key)} IS NULL THEN ${wireJsonSql(dialect, without, column)}
  ELSE ${wireJsonSql(dialect, with_, column)} END`;
    }
  }
  const pieces: Piece[] = [];
  fields.forEach((field, i) => {
    const member: Piece[] = [{ text: `${i === 0 ? '{' : ','}"${field.key}":` }, { sql: value(dialect, field, column(field.key)) }];
    pieces.push(...(field.optional ? [{ sql: `coalesce(${concat(member)}, '')` }] : member));
  });
  pieces.push({ text: '}' });
  return concat(pieces);
}

/**
 * A new event id (domain/webhook.ts EVENT_ID) in SQL: `nowMs`, the time in milliseconds (the dialect's
 * nowMs), in hexadecimal, then random hexadecimal digits (SQLite's randomblob; PostgreSQL's
 * gen_random_uuid, whose version and variant digits fall past the twenty taken).
 */
export function eventIdSql(d: Dialect, nowMs: Part): Sql {
  const { prefix, timeDigits, randomDigits } = EVENT_ID;
  return d.backend === 'sqlite'
    ? sql`${raw(`'${prefix}' || printf('%0${timeDigits}x', `)}${nowMs}) || lower(hex(randomblob(${raw(String(randomDigits / 2))})))`
    : sql`${raw(`'${prefix}' || lpad(to_hex(`)}${nowMs}), ${raw(String(timeDigits))}, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 1, ${raw(String(randomDigits))})`;
}
