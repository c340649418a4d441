/**
 * The schema keyword (an ajv plugin in http/plugins/json.ts) that decides an `id` on its exact literal and hands
 * on a `bigint`. An `x-` name, so that the published OpenAPI document stays valid.
 */
export const EXACT_INT64 = 'x-exact-int64';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export function isInt64(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX;
}

const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** More digits than any int64 has; beyond this we only need to know "out of range". */
const BEYOND_INT64_DIGITS = 20;

/**
 * The exact integer a JSON number literal denotes, or null when its value has a fractional part.
 * JSON Schema's `integer` is about the value, so `1.0` and `1e3` are integers; `1.5` is not.
 * Values too large for int64 come back as ±10^20 so that a literal like `1e999999999` costs nothing.
 */
export function integerOfJsonNumber(literal: string): bigint | null {
  const m = JSON_NUMBER.exec(literal);
  if (!m) return null;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = m;
  const significant = (whole + fraction).replace(/^0+/, '');
  if (significant === '') return 0n;
  const digits = significant.replace(/0+$/, '');
  const scale = Number(exponent) - fraction.length + (significant.length - digits.length);
  if (scale < 0) return null;
  const magnitude =
    digits.length + scale > BEYOND_INT64_DIGITS ? 10n ** BigInt(BEYOND_INT64_DIGITS) : BigInt(digits) * 10n ** BigInt(scale);
  return sign === '-' ? -magnitude : magnitude;
}

const DECIMAL_INT = /^-?\d{1,20}$/;

/** A decimal int64 as written in a URL path, or null. */
export function parseInt64(text: string): bigint | null {
  if (!DECIMAL_INT.test(text)) return null;
  const value = BigInt(text);
  return isInt64(value) ? value : null;
}
