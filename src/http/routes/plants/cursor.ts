import { createCipheriv, createDecipheriv, createHmac, hash, timingSafeEqual, type Cipher, type Decipher } from 'node:crypto';
import type { PlantPage, Store } from '../../../store/store.js';
import { CURSOR_REFUSED, V1_FORM, V2_FORM } from './cursor-form.js';
import { ApiError, ERRORS } from '../../errors.js';

/** The listing a cursor continues: a cursor opens only for the same owner (or admin) and tag filter. */
export interface CursorScope {
  /** Null for an admin's listing of every owner. */
  readonly owner: string | null;
  readonly tag?: string | undefined;
}

const KEY_BYTES = 32;
/** One AES block: the position (8 bytes, big-endian), then the listing's check (8 bytes). */
const BLOCK_BYTES = 16;
const POSITION_BYTES = 8;
const CHECK_BYTES = BLOCK_BYTES - POSITION_BYTES;
/** Version 1, still opened: nonce (12) ‖ position encrypted with AES-256-GCM (8) ‖ GCM tag (16). */
const V1_NONCE_BYTES = 12;
const V1_TAG_BYTES = 16;
const V1_BYTES = V1_NONCE_BYTES + POSITION_BYTES + V1_TAG_BYTES;

const V2_TEXT = new RegExp(`^${V2_FORM}$`);
const V1_TEXT = new RegExp(`^${V1_FORM}$`);

/**
 * The listing as one string. User names hold no control characters and tags no U+0000, so U+0000
 * separates fields; "*" (an admin's listing) can never equal "@" + a user name. The version keeps one
 * format's listings apart from another's.
 */
const listingText = (version: string, { owner, tag }: CursorScope): string =>
  `plantstore cursor ${version}\u0000${owner === null ? '*' : `@${owner}`}${tag === undefined ? '' : `\u0000${tag}`}`;

/** The listing's check, the redundancy a version 2 cursor carries: the first 8 bytes of SHA-256 of its text. */
const checkOf = (scope: CursorScope): Buffer => hash('sha256', listingText('v2', scope), 'buffer').subarray(0, CHECK_BYTES);

/**
 * Pagination cursors: base64url of one AES-256 block, position ‖ check, enciphered under a key derived
 * from the one the store keeps (so every instance on it opens every cursor). This is encode-then-encipher
 * (Bellare and Rogaway, 2000): a block cipher is a pseudorandom permutation, so
 *
 * - a client sees 22 random-looking characters whatever the position (a creation position counted over
 *   the whole store, which is not theirs to know);
 * - a cursor changed in any bit deciphers to a block unrelated to the one sealed, whose last 8 bytes equal
 *   the listing's check with probability 2^-64: it does not open. Nor does one taken to another user's or
 *   another filter's listing, whose check differs (the owner, or "admin", and the tag filter are in it);
 * - the same position of the same listing is the same cursor, from any instance. That tells its holder
 *   nothing the page did not (where it ends); cursors of different listings differ.
 *
 * The limit is not bound: changing the page size while paging is harmless. One cipher object each way,
 * made once, enciphers one block a call (ECB on a single block is the bare permutation), about half the
 * cost of version 1's AES-GCM, which needs a cipher object per cursor (bench/tools/cursor.ts measures both). The version 2 key is HMAC-SHA-256(store key, a label), so the two versions never share an AES
 * key; version 1 cursors, sealed by earlier releases, still open (with the store key, as before) but are
 * no longer sealed.
 */
export class CursorCodec {
  readonly #key: Buffer;
  readonly #encipher: Cipher;
  readonly #decipher: Decipher;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`a cursor key has ${KEY_BYTES} bytes, not ${key.length}`);
    this.#key = key;
    const v2 = createHmac('sha256', key).update('plantstore cursor v2: AES-256 key').digest();
    // No padding: every call is one whole block in, one block out, and no call ever ends the stream.
    this.#encipher = createCipheriv('aes-256-ecb', v2, null).setAutoPadding(false);
    this.#decipher = createDecipheriv('aes-256-ecb', v2, null).setAutoPadding(false);
  }

  seal(position: number, scope: CursorScope): string {
    const block = Buffer.allocUnsafe(BLOCK_BYTES);
    block.writeBigUInt64BE(BigInt(position));
    checkOf(scope).copy(block, POSITION_BYTES);
    return this.#encipher.update(block).toString('base64url');
  }

  /** The position sealed in `cursor` for this listing, or null when it was not (changed, foreign, garbage). */
  open(cursor: string, scope: CursorScope): number | null {
    const position = V2_TEXT.test(cursor) ? this.#openV2(Buffer.from(cursor, 'base64url'), scope)
      : V1_TEXT.test(cursor) ? this.#openV1(Buffer.from(cursor, 'base64url'), scope)
        : null;
    return position !== null && position <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(position) : null;
  }

  /** A version 2 cursor: the block deciphered, its check compared with the listing's. */
  #openV2(bytes: Buffer, scope: CursorScope): bigint | null {
    const block = this.#decipher.update(bytes);
    if (block.length !== BLOCK_BYTES || !timingSafeEqual(block.subarray(POSITION_BYTES), checkOf(scope))) return null;
    return block.readBigUInt64BE();
  }

  /** A version 1 cursor: AES-256-GCM under the store key, the listing as associated data. */
  #openV1(bytes: Buffer, scope: CursorScope): bigint | null {
    if (bytes.length !== V1_BYTES) return null;
    const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, V1_NONCE_BYTES), { authTagLength: V1_TAG_BYTES });
    decipher.setAAD(Buffer.from(listingText('v1', scope)));
    decipher.setAuthTag(bytes.subarray(V1_NONCE_BYTES + POSITION_BYTES));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(V1_NONCE_BYTES, V1_NONCE_BYTES + POSITION_BYTES)), decipher.final()]).readBigUInt64BE();
    } catch {
      return null; // the tag does not match
    }
  }
}

function opened(position: number | null): number {
  if (position === null) {
    throw new ApiError(ERRORS.invalidQuery, `${ERRORS.invalidQuery.message}: cursor ${CURSOR_REFUSED}`);
  }
  return position;
}

/**
 * The cursors of GET /plants: sealed with the store's key, read on first need (a store still opening
 * answers 503 until then). A store may hand out the same page object again while it is valid (a cached
 * page): the cursor sealed for it is kept with it, weakly, and goes when the page does (the store's
 * cache bounds how many there are; its byte bound allows for one such short text per page, see
 * PlantPage). A cached page belongs to one listing, and the listing is checked anyway.
 */
export class PageCursors {
  readonly #store: Store;
  #codec: CursorCodec | undefined;
  readonly #sealed = new WeakMap<PlantPage, { readonly cursor: string; readonly owner: string | null; readonly tag: string | undefined }>();

  constructor(store: Store) {
    this.#store = store;
  }

  async #load(): Promise<CursorCodec> {
    return (this.#codec ??= new CursorCodec(await this.#store.secrets.cursorKey()));
  }

  /** The position to continue after; 400 40003 for anything not sealed for this listing. */
  async open(cursor: string, scope: CursorScope): Promise<number> {
    return this.openNow(cursor, scope) ?? opened((await this.#load()).open(cursor, scope));
  }

  /**
   * As `open`, at once, once the key has been read (by any request before): `undefined` until then.
   * Throws the 400 as `open` rejects with it.
   */
  openNow(cursor: string, scope: CursorScope): number | undefined {
    return this.#codec === undefined ? undefined : opened(this.#codec.open(cursor, scope));
  }

  /** The cursor already sealed for this page of this listing, if any: no promise, no cipher. */
  known(page: PlantPage, scope: CursorScope): string | undefined {
    const known = this.#sealed.get(page);
    return known !== undefined && known.owner === scope.owner && known.tag === scope.tag ? known.cursor : undefined;
  }

  /** A cursor for the position after this page (which has a next position). */
  async seal(page: PlantPage, scope: CursorScope): Promise<string> {
    const position = page.next;
    if (position === null) throw new Error('a last page has no next cursor');
    const cursor = (this.#codec ?? (await this.#load())).seal(position, scope);
    this.#sealed.set(page, { cursor, owner: scope.owner, tag: scope.tag });
    return cursor;
  }
}
