/**
 * The JSON objects plantstore writes in more than one place (JavaScript and the SQL of each backend), each
 * defined once as its ordered fields: store/sql/wire.ts generates each dialect's SQL expression from the
 * same definition, and test/store/wire.test.ts checks both backends' bytes against `wireJson`.
 */

/** One member of a wire object: its key, how its value is written, and whether it is left out when absent. */
export interface WireField {
  readonly key: string;
  /** `string`: JSON-escaped as JSON.stringify escapes it; `int64`: the exact digits of a bigint. */
  readonly kind: 'string' | 'int64';
  /** Left out, never null, when absent (undefined in JavaScript, NULL in SQL). */
  readonly optional: boolean;
}

/** The compact JSON of `value` as `fields` define it: their order, no spaces, optional ones only when present. */
export function wireJson(fields: readonly WireField[], value: Readonly<Record<string, unknown>>): string {
  let json = '';
  for (const field of fields) {
    const v = value[field.key];
    if (v === undefined && field.optional) continue;
    json += `${json === '' ? '{' : ','}"${field.key}":${field.kind === 'int64' ? String(v as bigint) : JSON.stringify(v)}`;
  }
  return `${json === '' ? '{' : json}}`;
}
