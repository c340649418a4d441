import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { isLosslessNumber, parse as parseLossless } from 'lossless-json';
import { integerOfJsonNumber } from '../domain/int64.js';
import { ApiError, ERRORS } from './errors.js';

/** Where the parser leaves the exact value of a body's `id` when a double could not hold it. */
const EXACT_ID = Symbol('exactId');
type WithExactId = { [EXACT_ID]?: bigint | null };

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/**
 * JSON bodies, parsed losslessly. `JSON.parse` reads every number as a double, which is exact only up to
 * 2^53; an int64 id past that would silently become a neighbour. So when the top-level `id` is a number
 * that is not a safe integer, the body is read again with lossless-json to recover the literal's digits.
 * The common case costs one native `JSON.parse`.
 */
export function registerJsonParser(app: FastifyInstance, { maxDepth }: { maxDepth: number }): void {
  // Only JSON is accepted; Fastify's default text/plain parser would let a text body reach validation.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
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

export function parseJson(bytes: Buffer, maxDepth: number): unknown {
  if (bytes.length === 0) throw new ApiError(ERRORS.malformedJson, 'The request body is empty');
  // RFC 8259 §8.1: JSON text is UTF-8. Decoding invalid bytes would silently store U+FFFD instead.
  if (!isUtf8(bytes)) throw new ApiError(ERRORS.malformedJson, 'The request body is not valid UTF-8');
  const text = bytes.toString('utf8');
  if (nestingExceeds(text, maxDepth)) {
    throw new ApiError(ERRORS.malformedJson, `The request body nests arrays and objects deeper than ${maxDepth} levels (MAX_JSON_DEPTH)`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(ERRORS.malformedJson);
  }
  if (isObject(value) && typeof value.id === 'number' && !Number.isSafeInteger(value.id)) {
    (value as WithExactId)[EXACT_ID] = exactIdOf(text);
  }
  return value;
}

function exactIdOf(text: string): bigint | null {
  let reparsed: unknown;
  try {
    reparsed = parseLossless(text);
  } catch (error) {
    // JSON.parse accepted the text, so the only thing lossless-json refuses is a key repeated with
    // different values, which makes "the id" ambiguous.
    throw new ApiError(ERRORS.malformedJson, `The request body is ambiguous: ${(error as Error).message}`);
  }
  const id = isObject(reparsed) ? reparsed.id : undefined;
  return isLosslessNumber(id) ? integerOfJsonNumber(id.value) : null;
}

/** The exact integer value of a parsed body's `id`, or null when it is not an integer. */
export function exactId(body: { id: number }): bigint | null {
  const exact = (body as WithExactId)[EXACT_ID];
  if (exact !== undefined) return exact;
  return Number.isSafeInteger(body.id) ? BigInt(body.id) : null;
}

/**
 * Whether the JSON text opens more than `max` arrays and objects inside one another. Checked before
 * parsing: a NewPlant needs one level, and deep nesting only costs memory and time (and would overflow
 * lossless-json, which recurses).
 */
export function nestingExceeds(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
