import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { EXACT_INT64, integerOfJsonNumber, isInt64 } from '../../domain/int64.js';
import { ApiError, ERRORS } from '../errors.js';

/** Where the parser leaves the literal of a body's top-level `id`, as written, when it is a number. */
const ID_LITERAL = Symbol('idLiteral');
type WithIdLiteral = { [ID_LITERAL]?: string };

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/**
 * JSON bodies, read exactly. `JSON.parse` reads every number as a double, which is exact only up to 2^53
 * and rounds a literal like `2.00000000000000001` to an integer, and it silently keeps the last of two
 * equal keys. So one pass over the text first (scan) refuses repeated keys and deep nesting and keeps the
 * top-level `id` literal, whose exact value decides the id; JSON.parse then builds the values.
 */
export function registerJsonParser(app: FastifyInstance, { maxDepth }: { maxDepth: number }): void {
  // Only JSON is accepted; Fastify's default text/plain parser would let a text body reach validation.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // Many clients send Content-Type on every request. A route that takes no body (DELETE) has nothing
    // for an empty one to describe; a route that does (POST /plants) still refuses it below.
    if ((body as Buffer).length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined);
      return;
    }
    const coding = request.headers['content-encoding'];
    if (coding !== undefined && !onlyIdentity(coding)) {
      done(new ApiError(ERRORS.unsupportedMediaType, `${ERRORS.unsupportedMediaType.message}; got Content-Encoding ${coding}`, ACCEPT_IDENTITY));
      return;
    }
    const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(new ApiError(ERRORS.unsupportedMediaType, `${ERRORS.unsupportedMediaType.message}; got charset ${charset}`));
      return;
    }
    try {
      done(null, parseJson(body as Buffer, maxDepth));
    } catch (error) {
      done(error as Error);
    }
  });
}

/**
 * No content coding is decoded: gzip bytes would be read as JSON, a `br` label on a plain body ignored.
 * RFC 9110 §8.4 allows 415 for a coding not accepted, and §15.5.16 says to name what is: no coding.
 */
const ACCEPT_IDENTITY = { 'accept-encoding': 'identity' };

/** Whether a Content-Encoding names no coding: only `identity` (RFC 9110 §8.4.1), in any case, or nothing. */
const onlyIdentity = (coding: string): boolean => coding.split(',').every((c) => /^\s*(identity)?\s*$/i.test(c));

export function parseJson(bytes: Buffer, maxDepth: number): unknown {
  if (bytes.length === 0) throw new ApiError(ERRORS.malformedJson, 'The request body is empty');
  // RFC 8259 §8.1: JSON text is UTF-8. Decoding invalid bytes would silently store U+FFFD instead.
  if (!isUtf8(bytes)) throw new ApiError(ERRORS.malformedJson, 'The request body is not valid UTF-8');
  const text = bytes.toString('utf8');
  const { keys, idLiteral } = scan(text, maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(ERRORS.malformedJson);
  }
  // JSON.parse keeps one property per distinct key (compared after unescaping), so fewer properties than
  // keys written means a key was repeated. Counting is cheaper than collecting the keys of every object.
  if (countProperties(value) !== keys) {
    throw new ApiError(ERRORS.malformedJson, `The request body is ambiguous: duplicate key ${repeatedKey(text, maxDepth)} in one object`);
  }
  if (idLiteral !== undefined && isObject(value)) (value as WithIdLiteral)[ID_LITERAL] = idLiteral;
  return value;
}

/**
 * Hands the EXACT_INT64 keyword the digits an `id` other than a body's was written with (a path parameter,
 * made a number so that `type: integer` takes it): the keyword decides on them, as on a body's literal.
 */
export function keepIdLiteral(target: object, literal: string): void {
  (target as WithIdLiteral)[ID_LITERAL] = literal;
}

const PLAIN_SAFE_INTEGER = /^-?\d{1,15}$/;

/**
 * The exact integer value of a parsed body's `id`, or null when it is not an integer. Up to 15 plain
 * digits is always a safe integer, read exactly by JSON.parse; anything else (a fraction, an exponent,
 * more digits) is decided by the literal's exact decimal value, never by its nearest double.
 */
function exactId(body: object, id: number): bigint | null {
  const literal = (body as WithIdLiteral)[ID_LITERAL];
  if (literal === undefined) return null;
  return PLAIN_SAFE_INTEGER.test(literal) ? BigInt(id) : integerOfJsonNumber(literal);
}

const NOT_INTEGER = 'must be an integer (1e3 and 1000.0 are; 1.5 and 2.00000000000000001 are not)';
const NOT_INT64 = 'must be a 64-bit signed integer';

/** ajv, as Fastify hands it to an `ajv.plugins` entry (ajv is Fastify's dependency, not ours). */
type AjvPlugin = Extract<NonNullable<NonNullable<FastifyServerOptions['ajv']>['plugins']>[number], (...args: never[]) => unknown>;
type Ajv = Parameters<AjvPlugin>[0];
type KeywordValidate = Parameters<Ajv['addKeyword']>[0] extends infer D ? (D extends { validate?: infer V } ? NonNullable<V> : never) : never;

/**
 * An ajv plugin (Fastify's `ajv.plugins`) for the `x-exact-int64` keyword: after `type: integer` has
 * passed, it decides integer-ness and the int64 range on the literal as written (JSON.parse rounds
 * 2.00000000000000001 to 2 and 2^63 to a double), and replaces the number with that exact `bigint`, so
 * the handler gets a checked bigint and checks nothing again. A path parameter's digits reach it the
 * same way (keepIdLiteral, from http/plugins/query.ts). Its refusals are ordinary validation errors: 400 40002
 * "id must be …" in a body, 40004 in a path.
 */
export const exactInt64Keyword: AjvPlugin = (ajv) => {
  const validate: KeywordValidate = (_schema: unknown, data: number, _parentSchema?: unknown, cxt?: DataContext) => {
    // ajv passes the data context to every keyword of a property; without it there is no literal to read.
    const id = cxt === undefined ? null : exactId(cxt.parentData, data);
    if (cxt === undefined || id === null || !isInt64(id)) {
      const message = id === null ? NOT_INTEGER : NOT_INT64;
      validate.errors = [{ keyword: EXACT_INT64, instancePath: cxt?.instancePath ?? '', schemaPath: '', params: {}, message }];
      return false;
    }
    cxt.parentData[cxt.parentDataProperty] = id;
    return true;
  };
  ajv.addKeyword({ keyword: EXACT_INT64, type: 'number', modifying: true, errors: true, validate });
  return ajv;
};

interface DataContext {
  instancePath: string;
  parentData: Record<string | number, unknown>;
  parentDataProperty: string | number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const LOWER_I = 0x69;
const LOWER_D = 0x64;

export interface Scanned {
  /** How many keys the text writes, in all its objects. */
  readonly keys: number;
  /** The literal of the top-level object's `id`, when it is a number. */
  readonly idLiteral: string | undefined;
}

/**
 * One pass over a JSON text, before it is parsed: refuses (400 40001) nesting deeper than `maxDepth` (a
 * NewPlant needs one level; deep nesting only costs memory and time), counts the keys written, and keeps
 * the top-level `id` literal. Checks nothing else: an invalid text may pass here, JSON.parse refuses it.
 */
export function scan(text: string, maxDepth: number): Scanned {
  /** For each open array or object, by depth: whether it is an object (its strings alternate key, value). */
  const isObjectAt: boolean[] = [];
  let depth = 0;
  let keyNext = false;
  let keys = 0;
  let idLiteral: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i;
      i = stringEnd(text, i);
      if (keyNext) {
        keyNext = false;
        keys++;
        if (depth === 1 && isIdKey(text, start, i)) idLiteral = numberAfterColon(text, i + 1);
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === maxDepth) throw tooDeep(maxDepth);
      keyNext = c === OPEN_OBJECT;
      isObjectAt[depth++] = keyNext;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      keyNext = false;
    } else if (c === COMMA) {
      keyNext = isObjectAt[depth - 1] === true;
    }
  }
  return { keys, idLiteral };
}

/** Whether the JSON text opens more than `max` arrays and objects inside one another (scan's first refusal). */
export function nestingExceeds(text: string, max: number): boolean {
  try {
    scan(text, max);
    return false;
  } catch {
    return true;
  }
}

function tooDeep(maxDepth: number): ApiError {
  return new ApiError(ERRORS.malformedJson, `The request body nests arrays and objects deeper than ${maxDepth} levels (MAX_JSON_DEPTH)`);
}

/**
 * The index of the quote closing the string that opens at `start` (the text's length if none). indexOf
 * is native: a 200-character name is skipped about three times faster than char by char.
 */
function stringEnd(text: string, start: number): number {
  for (let quote = start; ; ) {
    quote = text.indexOf('"', quote + 1);
    if (quote < 0) return text.length;
    let before = quote - 1;
    while (text.charCodeAt(before) === BACKSLASH) before--;
    // An even number of backslashes escape each other, not the quote.
    if ((quote - 1 - before) % 2 === 0) return quote;
  }
}

/** Whether the string from `start` to `end` (its quotes) is "id", escaped or not. */
function isIdKey(text: string, start: number, end: number): boolean {
  if (end - start === 3) return text.charCodeAt(start + 1) === LOWER_I && text.charCodeAt(start + 2) === LOWER_D;
  if (!text.slice(start + 1, end).includes('\\')) return false;
  try {
    return JSON.parse(text.slice(start, end + 1)) === 'id';
  } catch {
    return false; // not a valid string: JSON.parse refuses the whole text
  }
}

/** The number literal after `:` (and whitespace) at `from`, if the value there is a number. */
function numberAfterColon(text: string, from: number): string | undefined {
  let i = skipSpace(text, from);
  if (text.charCodeAt(i) !== COLON) return undefined;
  const start = (i = skipSpace(text, i + 1));
  const first = text.charCodeAt(start);
  if (first !== MINUS && !isDigit(first)) return undefined;
  while (i < text.length && isNumberChar(text.charCodeAt(i))) i++;
  return text.slice(start, i);
}

/** RFC 8259 §2: space, tab, line feed, carriage return. */
function skipSpace(text: string, from: number): number {
  let i = from;
  for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  return i;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
/** Digits, sign, decimal point, exponent: every character a JSON number literal may hold. */
const isNumberChar = (c: number): boolean => isDigit(c) || c === MINUS || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;

/** How many properties a parsed JSON value holds, in all its objects (Object.values: own, string-keyed). */
function countProperties(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let count = 0;
  if (Array.isArray(value)) {
    for (const item of value) count += countProperties(item);
    return count;
  }
  const values = Object.values(value);
  count = values.length;
  for (const item of values) if (typeof item === 'object' && item !== null) count += countProperties(item);
  return count;
}

/** The first key written twice in one object, for the error message (a rare path, so kept simple). */
function repeatedKey(text: string, maxDepth: number): string {
  const open: Array<Set<string> | null> = [];
  let keyNext = false;
  for (let i = 0; i < text.length && open.length <= maxDepth; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i;
      i = stringEnd(text, i);
      const keys = open[open.length - 1];
      if (keyNext && keys) {
        const key = JSON.parse(text.slice(start, i + 1)) as string; // JSON.parse accepted the whole text
        if (keys.has(key)) return key.length > 40 ? `${JSON.stringify(key.slice(0, 40))}…` : JSON.stringify(key);
        keys.add(key);
      }
      keyNext = false;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      keyNext = c === OPEN_OBJECT;
      open.push(keyNext ? new Set() : null);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
      keyNext = false;
    } else if (c === COMMA) {
      keyNext = open[open.length - 1] != null;
    }
  }
  return '(unknown)';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
