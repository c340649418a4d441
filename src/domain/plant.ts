import { Type, type Static } from 'typebox';
import { EXACT_INT64 } from './int64.js';
import { wireJson, type WireField } from './wire.js';

export const NAME_MAX_CHARS = 200;
export const TAG_MAX_CHARS = 100;

/**
 * Every string we accept must come back byte for byte from every backend. SQLite stores UTF-8, so an
 * unpaired UTF-16 surrogate (legal in a JSON string) would return as U+FFFD; PostgreSQL `text` cannot
 * hold U+0000 at all. Both are refused here, once, for all backends. The pattern means the same with or
 * without a regular expression's Unicode mode (ajv uses it; a client's validator may not): a character
 * that is neither U+0000 nor a surrogate, or a high surrogate followed by a low one (a pair: an emoji,
 * one code point in Unicode mode, where the first branch takes it). So a schema-driven client neither
 * sends what the server refuses nor refuses an emoji the server takes.
 */
const STORABLE_CHAR = '[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]';
export const STORABLE_TEXT = `^(?:${STORABLE_CHAR})*$`;

/** Lengths count Unicode code points (ajv's maxLength does), so an emoji is one character. */
export const PlantName = Type.String({
  minLength: 1,
  maxLength: NAME_MAX_CHARS,
  pattern: STORABLE_TEXT,
  description: `1 to ${NAME_MAX_CHARS} characters; no U+0000 and no unpaired surrogates`,
});

export const PlantTag = Type.String({
  maxLength: TAG_MAX_CHARS,
  pattern: STORABLE_TEXT,
  description: `0 to ${TAG_MAX_CHARS} characters; no U+0000 and no unpaired surrogates`,
});

export const PlantSchema = Type.Object(
  { name: Type.String(), tag: Type.Optional(Type.String()) },
  { $id: 'Plant', additionalProperties: false, description: 'A plant as the service returns it' },
);

export const NewPlantSchema = Type.Object(
  {
    // Validated as an integer, then by the EXACT_INT64 keyword on its literal as written, which hands the
    // handler the exact `bigint`. No minimum/maximum: as doubles they would publish 2^63 rounded.
    id: Type.Unsafe<bigint>(
      Type.Integer({
        format: 'int64',
        [EXACT_INT64]: true,
        description: 'Exact 64-bit signed integer; JSON numbers beyond 2^53 keep every digit',
      }),
    ),
    name: PlantName,
    tag: Type.Optional(PlantTag),
  },
  { $id: 'NewPlant', description: 'A plant to create; unknown fields are ignored' },
);

export type Plant = { name: string; tag?: string };
/** A NewPlant as a validated body: its `id` already the exact bigint (EXACT_INT64). */
export type NewPlantBody = Static<typeof NewPlantSchema>;
export type NewPlant = { id: bigint; name: string; tag?: string };

/** The Plant view of a NewPlant: `tag` appears only when it was given, never as null. */
export function plantOf(plant: NewPlant): Plant {
  return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

/** A Plant from stored columns, where a plant without a tag has tag NULL. */
export function plantOfColumns(row: { name: string; tag: string | null }): Plant {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
}

/** Whether two plants have the same content (an idempotent replay), telling an absent tag from "". */
export function samePlant(a: Plant, b: Plant): boolean {
  return a.name === b.name && a.tag === b.tag;
}

/**
 * A Plant's JSON, exactly as the list route's schema (PlantSchema) serializes it: name, then tag only when
 * present, compact. The list statements of both backends make this text in SQL (store/sql/wire.ts).
 */
export const PLANT_JSON: readonly WireField[] = [
  { key: 'name', kind: 'string', optional: false },
  { key: 'tag', kind: 'string', optional: true },
];

/** A plant as PLANT_JSON writes it. */
export function plantJson(plant: Plant): string {
  return wireJson(PLANT_JSON, plant);
}

/** A list's plants as the list route sends them: a JSON array of plantJson. */
export function plantsJson(plants: readonly Plant[]): string {
  let json = '[';
  for (let i = 0; i < plants.length; i++) json += (i === 0 ? '' : ',') + plantJson(plants[i] as Plant);
  return `${json}]`;
}
