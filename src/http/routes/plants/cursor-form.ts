/*
 * The text forms of a pagination cursor (cursor.ts seals and opens them), apart from the codec so that
 * the query schema and the error table can name them without importing the codec (which imports the
 * error table).
 */

/**
 * 16 bytes in base64url are 22 characters whose last carries 2 bits and 4 zero bits (A, Q, g or w):
 * only the one text of each block is accepted, so no other text opens as the same cursor. Version 1:
 * 36 bytes, exactly 48 characters. Nothing to escape in a URL either way.
 */
export const V2_FORM = '[A-Za-z0-9_-]{21}[AQgw]';
export const V1_FORM = '[A-Za-z0-9_-]{48}';
/** The query string's schema: either form, and nothing else reaches the codec. */
export const CURSOR_PATTERN = `^(?:${V2_FORM}|${V1_FORM})$`;

/**
 * What a client is told of a cursor refused, whether by its form or by its seal: one sentence, which
 * neither quotes the pattern nor tells the two apart (a client can do nothing different about either).
 */
export const CURSOR_REFUSED = 'is not one this server issued for this listing';
