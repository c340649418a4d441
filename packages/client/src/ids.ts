/**
 * A plant id as the client takes it. The published document types NewPlant.id as an int64 `integer`,
 * which openapi-typescript (and every generator) maps to `number`: a double, exact only up to 2^53. So
 * the client's own type is wider, and it maps ids to the exact `bigint` itself (toPlantId).
 */
export type PlantId = bigint | number | string;

// The API's range (not imported from the server's domain/int64.ts: the client carries no server code).
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** As the server reads a path id: an optional '-' and at most 20 decimal digits. */
const DECIMAL = /^-?[0-9]{1,20}$/;

/**
 * The exact int64 an id stands for. Throws a RangeError, before any request is made, for a number that
 * is not a safe integer (its digits may already be lost: 2 ** 53 + 1 is 9007199254740992), a string
 * that is not a decimal integer, or a value outside the int64 range; a TypeError for any other type.
 */
export function toPlantId(id: PlantId): bigint {
  let value: bigint;
  if (typeof id === 'bigint') value = id;
  else if (typeof id === 'number') {
    if (!Number.isSafeInteger(id)) {
      throw new RangeError(`plant id ${String(id)} is not a safe integer (its digits may be lost); pass a bigint or a decimal string`);
    }
    value = BigInt(id);
  } else if (typeof id === 'string') {
    if (!DECIMAL.test(id)) throw new RangeError(`plant id ${JSON.stringify(id)} is not a decimal integer`);
    value = BigInt(id);
  } else {
    throw new TypeError(`a plant id is a bigint, a number or a decimal string, not ${typeof id}`);
  }
  if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`plant id ${value} is outside the 64-bit signed range`);
  return value;
}

/**
 * The NewPlant JSON text, the id written with every digit: JSON.stringify cannot write a bigint (it
 * throws), and a number past 2^53 would already be rounded. Only `name` and `tag` are sent besides it.
 */
export function newPlantJson(id: bigint, name: string, tag: string | undefined): string {
  const fields = JSON.stringify(tag === undefined ? { name } : { name, tag });
  // `{}` when a JavaScript caller gave no name: sent as it is, for the server to refuse (40002).
  return fields === '{}' ? `{"id":${id}}` : `{"id":${id},${fields.slice(1)}`;
}

const JSON_INTEGER = /^-?(0|[1-9][0-9]*)$/;
/** A number's text where a value starts, after any whitespace. */
const NUMBER_AT = /\s*(-?[0-9][0-9.eE+-]*)/y;

/**
 * The JSON object `text` stands for, with its top-level member `key` as the exact bigint its digits
 * write: JSON.parse alone rounds a number past 2^53 to a double (and its reviver's source text is not in
 * Node.js 20). undefined when `text` is not a JSON object whose `key` is an integer.
 */
export function parseWithExactInteger(text: string, key: string): { object: Record<string, unknown>; value: bigint } | undefined {
  let object: unknown;
  try {
    object = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return undefined;
  if (typeof (object as Record<string, unknown>)[key] !== 'number') return undefined;
  // The text is valid JSON: find the member's number, skipping strings (their escapes too) and nested values.
  let depth = 0;
  let keyNext = false;
  let member: string | undefined;
  let digits: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (depth === 1 && keyNext) member = JSON.parse(text.slice(i, end + 1)) as string;
      keyNext = false;
      i = end;
    } else if (c === '{' || c === '[') {
      depth++;
      keyNext = depth === 1;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (depth === 1 && c === ',') {
      keyNext = true;
    } else if (depth === 1 && c === ':' && member === key) {
      NUMBER_AT.lastIndex = i + 1;
      digits = NUMBER_AT.exec(text)?.[1]; // the last one wins, as in JSON.parse
    }
  }
  if (digits === undefined || !JSON_INTEGER.test(digits)) return undefined;
  return { object: object as Record<string, unknown>, value: BigInt(digits) };
}
