const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;
const UNITS = Object.keys(UNIT_MS) as Unit[];
/** The largest count a duration may have in any unit. */
const COUNT_MAX = 999_999;

const digitClass = (low: number, high: number): string => (low === high ? String(low) : low === 0 && high === 9 ? '\\d' : `[${low}-${high}]`);
const anyDigits = (n: number): string => (n === 0 ? '' : n === 1 ? '\\d' : `\\d{${n}}`);
const anyDigitsUpTo = (n: number): string => (n === 0 ? '' : n === 1 ? '\\d?' : `\\d{0,${n}}`);

/**
 * A regular expression (without anchors) for the whole numbers 0 to `max`, in decimal without leading
 * zeros: a pattern can bound a number only by its digits, so a bound in a published schema is written
 * out this way rather than left to a sentence.
 */
export function wholeNumbersUpTo(max: number): string {
  if (!Number.isSafeInteger(max) || max < 0) throw new Error(`not a bound: ${max}`);
  if (max === 0) return '0';
  const digits = String(max);
  const n = digits.length;
  if (/^9+$/.test(digits)) return `0|[1-9]${anyDigitsUpTo(n - 1)}`;
  const parts = ['0'];
  if (n > 1) parts.push(`[1-9]${anyDigitsUpTo(n - 2)}`);
  // Numbers of max's length: equal to max up to position i, then a smaller digit, then any digits.
  for (let i = 0; i < n; i++) {
    const low = i === 0 ? 1 : 0;
    const digit = Number(digits[i]);
    if (i > 0 && /^9+$/.test(digits.slice(i))) {
      parts.push(digits.slice(0, i) + digitClass(low, 9) + anyDigits(n - i - 1));
      break;
    }
    if (digit > low) parts.push(digits.slice(0, i) + digitClass(low, digit - 1) + anyDigits(n - i - 1));
    if (i === n - 1) parts.push(digits);
  }
  return parts.join('|');
}

/**
 * The pattern of a duration of at most `maxMs` (default: any): `0` alone, or a whole number and a unit
 * (s, m, h, d), zero with any unit too. One grammar wherever a duration is read (the API, the CLI,
 * settings); each reader then sets its own bounds. No leading zeros and at most 999999 of a unit.
 */
export function durationPattern(maxMs = Number.POSITIVE_INFINITY): string {
  if (maxMs >= COUNT_MAX * UNIT_MS.d) return `^(?:0|(?:${wholeNumbersUpTo(COUNT_MAX)})[smhd])$`;
  const units = UNITS.map((unit) => `(?:${wholeNumbersUpTo(Math.min(COUNT_MAX, Math.floor(maxMs / UNIT_MS[unit])))})${unit}`);
  return `^(?:0|${units.join('|')})$`;
}

/** Any duration as written (see durationPattern). */
export const DURATION = new RegExp(durationPattern());
const FORM = /^(?:0|(\d+)([smhd]))$/;

/** `0`, `0s`, `90s`, `15m`, `12h`, `30d` → milliseconds, or null when malformed. */
export function parseDuration(text: string): number | null {
  if (!DURATION.test(text)) return null;
  const m = FORM.exec(text);
  return m === null || m[1] === undefined ? 0 : Number(m[1]) * UNIT_MS[m[2] as Unit];
}

/** What a duration looks like, for messages: the grammar in words. */
export const DURATION_RULE = 'must look like 30d, 12h, 15m or 90s (a whole number 0–999999 and s, m, h or d), or be 0';
