import { parseInt64 } from '../domain/int64.js';
import { NAME_MAX_CHARS, STORABLE_TEXT, TAG_MAX_CHARS } from '../domain/plant.js';
import { isScope, SCOPES, userNameProblem, type Scope } from '../domain/principal.js';
import { TOKEN_ID_IMPORT_MAX, TOKEN_ID_MAX } from '../domain/token.js';
import type {
  EndpointTransferRecord, EventTransferRecord, PlantRecord, TokenTransferRecord, TransferCounts,
} from '../store/transfer.js';
import { descriptionProblem, endpointUrlProblem } from '../webhooks/register.js';
import { COUNT_OF, FORMAT, KINDS, VERSION, type Header, type Kind } from './format.js';

/** The file is not what `plantstore export` writes: the message names the line and what is wrong. */
export class FormatError extends Error {}

export type Decoded =
  | { readonly kind: 'plant'; readonly record: PlantRecord }
  | { readonly kind: 'token'; readonly record: TokenTransferRecord }
  | { readonly kind: 'webhook'; readonly record: EndpointTransferRecord }
  | { readonly kind: 'event'; readonly record: EventTransferRecord };

const STORABLE = new RegExp(STORABLE_TEXT, 'u');
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HASH = /^[0-9a-f]{64}$/;
const ENDPOINT_ID = /^ep_[A-Za-z0-9_-]{1,64}$/;
const EVENT_ID = /^msg_[A-Za-z0-9_-]{1,64}$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{1,200}={0,2}$/;
/** Longer than any body plantstore makes (a 200-character name and a 100-character tag, escaped). */
const BODY_MAX_CHARS = 16_384;
const MAX_ATTEMPTS = 1000;

/** A field that fails its rule: thrown by the checks below, given its line number by `decodeLine`. */
class Bad extends Error {}

function parseObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Bad(`not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Bad('not a JSON object');
  return value as Record<string, unknown>;
}

/**
 * The literal of each top-level number value, by key, as written: JSON.parse rounds integers past
 * 2^53. Runs on text JSON.parse accepted, so it only tracks strings and nesting. Counts the top-level
 * keys too: JSON.parse keeps the last of two equal keys, and a record must not say two things.
 */
function numberLiterals(text: string): { literals: Map<string, string>; keys: number } {
  const literals = new Map<string, string>();
  let depth = 0;
  let keys = 0;
  let key: string | undefined;
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (depth === 1 && keyNext) {
        key = JSON.parse(text.slice(i, end + 1)) as string;
        keys++;
        keyNext = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      depth++;
      keyNext = depth === 1;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',') {
      keyNext = depth === 1;
    } else if (depth === 1 && key !== undefined && (c === '-' || (c !== undefined && c >= '0' && c <= '9'))) {
      let end = i;
      while (end < text.length && /[-+.eE0-9]/.test(text[end] as string)) end++;
      literals.set(key, text.slice(i, end));
      i = end - 1;
      key = undefined;
    } else if (c === 't' || c === 'f' || c === 'n') {
      key = undefined;
    }
  }
  return { literals, keys };
}

function exactly(object: Record<string, unknown>, required: readonly string[], optional: readonly string[] = []): void {
  for (const k of required) if (!(k in object)) throw new Bad(`no "${k}"`);
  const known = new Set([...required, ...optional]);
  for (const k of Object.keys(object)) if (!known.has(k)) throw new Bad(`unknown field "${k}"`);
}

function text(value: unknown, field: string, min: number, max: number): string {
  if (typeof value !== 'string') throw new Bad(`"${field}" must be a string`);
  const chars = [...value].length;
  if (chars < min || chars > max) throw new Bad(`"${field}" must be ${min} to ${max} characters, not ${chars}`);
  if (!STORABLE.test(value)) throw new Bad(`"${field}" must not contain U+0000 or unpaired surrogates`);
  return value;
}

function matching(value: unknown, field: string, pattern: RegExp): string {
  if (typeof value !== 'string' || !pattern.test(value)) throw new Bad(`"${field}" is not a valid ${field}`);
  return value;
}

function userName(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new Bad(`"${field}" must be a string`);
  const problem = userNameProblem(value);
  if (problem) throw new Bad(`"${field}" ${problem}`);
  return value;
}

function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new Bad(`"${field}" must be true or false`);
  return value;
}

function time(value: unknown, field: string): Date {
  const date = typeof value === 'string' && ISO_TIME.test(value) ? new Date(value) : undefined;
  if (date === undefined || Number.isNaN(date.getTime()) || date.toISOString() !== value) {
    throw new Bad(`"${field}" must be a time such as 2026-01-31T12:00:00.000Z`);
  }
  return date;
}

const timeOrNull = (value: unknown, field: string) => (value === null ? null : time(value, field));

function int64(literals: Map<string, string>, field: string): bigint {
  const literal = literals.get(field);
  const value = literal === undefined ? null : parseInt64(literal);
  if (value === null) throw new Bad(`"${field}" must be a 64-bit signed integer written with its digits`);
  return value;
}

function whole(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Bad(`"${field}" must be a whole number from ${min} to ${max}`);
  }
  return value;
}

function plant(o: Record<string, unknown>, literals: Map<string, string>): PlantRecord {
  exactly(o, ['type', 'owner', 'id', 'name'], ['tag']);
  return {
    owner: userName(o.owner, 'owner'),
    id: int64(literals, 'id'),
    name: text(o.name, 'name', 1, NAME_MAX_CHARS),
    tag: o.tag === undefined ? null : text(o.tag, 'tag', 0, TAG_MAX_CHARS),
  };
}

function scopes(value: unknown): Scope[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > SCOPES.length) throw new Bad(`"scopes" must list 1 to ${SCOPES.length} scopes`);
  for (const s of value) if (typeof s !== 'string' || !isScope(s)) throw new Bad(`"scopes" has an unknown scope ${JSON.stringify(s)}`);
  if (new Set(value).size !== value.length) throw new Bad('"scopes" names a scope twice');
  return value as Scope[];
}

/** Room is left for the tokens the store creates after the imported ones, up to TOKEN_ID_MAX (domain/token.ts). */
function tokenId(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > TOKEN_ID_IMPORT_MAX) {
    throw new Bad(
      `"id" must be a whole number from 1 to ${TOKEN_ID_IMPORT_MAX} (2^52): new tokens are numbered after the imported ones, ` +
        `and token ids end at ${TOKEN_ID_MAX}`,
    );
  }
  return whole(value, 'id', 1, TOKEN_ID_IMPORT_MAX);
}

function token(o: Record<string, unknown>): TokenTransferRecord {
  exactly(o, ['type', 'id', 'hash', 'user', 'scopes', 'admin', 'name', 'createdAt', 'expiresAt', 'revokedAt']);
  return {
    id: tokenId(o.id),
    hash: matching(o.hash, 'hash', HASH),
    user: userName(o.user, 'user'),
    scopes: scopes(o.scopes),
    admin: bool(o.admin, 'admin'),
    name: o.name === null ? null : userName(o.name, 'name'),
    createdAt: time(o.createdAt, 'createdAt'),
    expiresAt: timeOrNull(o.expiresAt, 'expiresAt'),
    revokedAt: timeOrNull(o.revokedAt, 'revokedAt'),
  };
}

function webhook(o: Record<string, unknown>): EndpointTransferRecord {
  exactly(o, ['type', 'id', 'user', 'allUsers', 'url', 'description', 'secret', 'createdAt', 'disabledAt', 'disabledReason']);
  // Whether the address may be called is decided at each delivery, by the importing server's settings.
  const url = typeof o.url === 'string' ? o.url : '';
  const urlProblem = endpointUrlProblem(url, true);
  if (urlProblem) throw new Bad(`"url" ${urlProblem.reason}`);
  const description = o.description === null ? null : text(o.description, 'description', 0, Number.MAX_SAFE_INTEGER);
  const descProblem = description === null ? null : descriptionProblem(description);
  if (descProblem) throw new Bad(`"description" ${descProblem}`);
  return {
    id: matching(o.id, 'id', ENDPOINT_ID),
    user: userName(o.user, 'user'),
    allUsers: bool(o.allUsers, 'allUsers'),
    url,
    description,
    secret: matching(o.secret, 'secret', SECRET),
    createdAt: time(o.createdAt, 'createdAt'),
    disabledAt: timeOrNull(o.disabledAt, 'disabledAt'),
    disabledReason: o.disabledReason === null ? null : text(o.disabledReason, 'disabledReason', 0, 500),
  };
}

function event(o: Record<string, unknown>, literals: Map<string, string>): EventTransferRecord {
  exactly(o, ['type', 'eventId', 'endpointId', 'plantId', 'body', 'attempts', 'nextAttemptAt', 'createdAt']);
  return {
    eventId: matching(o.eventId, 'eventId', EVENT_ID),
    endpointId: matching(o.endpointId, 'endpointId', ENDPOINT_ID),
    plantId: int64(literals, 'plantId'),
    body: text(o.body, 'body', 2, BODY_MAX_CHARS),
    attempts: whole(o.attempts, 'attempts', 0, MAX_ATTEMPTS),
    nextAttemptAt: time(o.nextAttemptAt, 'nextAttemptAt'),
    createdAt: time(o.createdAt, 'createdAt'),
  };
}

/** One record line, checked by the rules the API applies to what it stores. */
export function decodeLine(line: string, number: number): Decoded {
  try {
    const o = parseObject(line);
    const { literals, keys } = numberLiterals(line);
    if (keys !== Object.keys(o).length) throw new Bad('a field is written twice');
    switch (o.type) {
      case 'plant':
        return { kind: 'plant', record: plant(o, literals) };
      case 'token':
        return { kind: 'token', record: token(o) };
      case 'webhook':
        return { kind: 'webhook', record: webhook(o) };
      case 'event':
        return { kind: 'event', record: event(o, literals) };
      default:
        throw new Bad(`"type" must be one of ${KINDS.join(', ')}`);
    }
  } catch (error) {
    if (error instanceof Bad) throw new FormatError(`line ${number}: ${error.message}`);
    throw error;
  }
}

/** Line 1. A version this plantstore does not know is refused before anything is written. */
export function decodeHeader(line: string): Header {
  let o: Record<string, unknown>;
  try {
    o = parseObject(line);
  } catch (error) {
    throw new FormatError(`line 1 is not a plantstore export header: ${(error as Error).message}`);
  }
  if (o.format !== FORMAT) throw new FormatError(`line 1 is not a plantstore export header (its "format" is not "${FORMAT}")`);
  if (o.version !== VERSION) {
    throw new FormatError(
      `this file is in export format version ${JSON.stringify(o.version)}; this plantstore reads version ${VERSION} only: ` +
        'import it with the plantstore version that exported it, or a later one',
    );
  }
  const counts = o.counts as Record<string, unknown> | null;
  if (typeof counts !== 'object' || counts === null) throw new FormatError('line 1: the header has no "counts"');
  const count = (kind: Kind) => {
    const n = counts[COUNT_OF[kind]];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new FormatError(`line 1: the header's count of ${COUNT_OF[kind]} is not a whole number`);
    return n;
  };
  const parsedCounts: TransferCounts = { plants: count('plant'), tokens: count('token'), webhooks: count('webhook'), events: count('event') };
  if (typeof o.backend !== 'string' || typeof o.exportedAt !== 'string') throw new FormatError('line 1: the header has no "backend" or "exportedAt"');
  return { format: FORMAT, version: VERSION, backend: o.backend, exportedAt: o.exportedAt, counts: parsedCounts };
}
