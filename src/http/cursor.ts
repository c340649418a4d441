import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import type { PlantPage, Store } from '../store/store.js';
import { ApiError, ERRORS } from './errors.js';

/** The listing a cursor continues: a cursor opens only for the same owner (or admin) and tag filter. */
export interface CursorScope {
  /** Null for an admin's listing of every owner. */
  readonly owner: string | null;
  readonly tag?: string | undefined;
}

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const POSITION_BYTES = 8;
const TAG_BYTES = 16;
const CURSOR_BYTES = NONCE_BYTES + POSITION_BYTES + TAG_BYTES;

/** 36 bytes in base64url: exactly 48 characters, no padding, nothing to escape in a URL. */
export const CURSOR_PATTERN = `^[A-Za-z0-9_-]{${(CURSOR_BYTES * 4) / 3}}$`;

/**
 * Binds a cursor to its listing. User names hold no control characters and tags no U+0000, so U+0000
 * separates fields; "*" (an admin's listing) can never equal "@" + a user name. The version lets a
 * later format refuse today's cursors rather than misread them.
 */
function associatedData({ owner, tag }: CursorScope): Buffer {
  return Buffer.from(`plantstore cursor v1\u0000${owner === null ? '*' : `@${owner}`}${tag === undefined ? '' : `\u0000${tag}`}`);
}

/**
 * Pagination cursors, sealed with AES-256-GCM under a key the store keeps (so every instance on it
 * opens every cursor): base64url(nonce ‖ encrypted position ‖ GCM tag). The position is where the
 * listing continues, a creation position counted over the whole store, so it is encrypted: a client
 * sees 48 random-looking characters whatever the position, and a new random nonce each seal. The owner
 * (or "admin") and the tag filter are authenticated with it, so a cursor changed in any bit, or taken
 * to another user's or another filter's listing, does not open. The limit is not bound: changing the
 * page size while paging is harmless.
 *
 * Random 96-bit nonces: a nonce repeats among the cursors one client receives with probability about
 * n² / 2^97 for n cursors (2^-33 after four billion), and a repeat could help only the one who holds
 * both cursors.
 */
export class CursorCodec {
  readonly #key: Buffer;
  /** Nonces drawn from the system's CSPRNG in blocks: one call per 256 cursors, not one per cursor. */
  readonly #nonces = Buffer.alloc(NONCE_BYTES * 256);
  #used = this.#nonces.length;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`a cursor key has ${KEY_BYTES} bytes, not ${key.length}`);
    this.#key = key;
  }

  seal(position: number, scope: CursorScope): string {
    if (this.#used === this.#nonces.length) {
      randomFillSync(this.#nonces);
      this.#used = 0;
    }
    // A copy: the block is refilled later, and the cursor must keep its nonce.
    const nonce = Buffer.from(this.#nonces.subarray(this.#used, (this.#used += NONCE_BYTES)));
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(scope));
    const plain = Buffer.alloc(POSITION_BYTES);
    plain.writeBigUInt64BE(BigInt(position));
    return Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('base64url');
  }

  /** The position sealed in `cursor` for this listing, or null when it was not (changed, foreign, garbage). */
  open(cursor: string, scope: CursorScope): number | null {
    const bytes = Buffer.from(cursor, 'base64url');
    if (bytes.length !== CURSOR_BYTES) return null;
    const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(scope));
    decipher.setAuthTag(bytes.subarray(NONCE_BYTES + POSITION_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, NONCE_BYTES + POSITION_BYTES)), decipher.final()]);
    } catch {
      return null; // the tag does not match
    }
    const position = plain.readBigUInt64BE();
    return position <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(position) : null;
  }
}

/** How many cursors PageCursors remembers (about 250 bytes each, with both texts): 2.5 MB at most, in two generations. */
const MEMO_ENTRIES = 10_000;

/** A listing and a position in it, as one string: U+0000 separates, as in `associatedData`. */
const memoKey = (position: number, { owner, tag }: CursorScope): string =>
  `${position}\u0000${owner === null ? '*' : `@${owner}`}${tag === undefined ? '' : `\u0000${tag}`}`;

/** A cursor this process sealed or opened: its text, memoKey(position, listing), and the position. */
interface Known {
  readonly cursor: string;
  readonly key: string;
  readonly position: number;
}

/**
 * The cursors of GET /plants: sealed with the store's key, read on first need (a store still opening
 * answers 503 until then). A seal costs about as much CPU (5-10 µs) as the rest of a cached list, and an
 * open as much again, so cursors are remembered:
 *
 * - by page, weakly: a store may hand out the same page object again while it is valid (a cached page),
 *   and the cursor sealed for it is then kept for it. It goes when the page does, and the store's cache
 *   bounds how many there are (its byte bound allows for one such short text per page; see PlantPage).
 *   A cached page belongs to one listing, and the memo is checked against it anyway.
 * - by text and by listing position, the last MEMO_ENTRIES / 2 to MEMO_ENTRIES sealed or opened: a
 *   cursor this process sealed or already opened is known for what it is, and opens without the cipher,
 *   for its own listing only (anything else still goes to the cipher, which refuses it); and a page
 *   that ends at a position already sealed for its listing gets that same cursor again, rather than a
 *   new seal. The same text for the same position of the same listing tells the client nothing its
 *   page does not (the position is after the page's last plant); another process, or this one once it
 *   has forgotten, seals it anew with a fresh nonce.
 */
export class PageCursors {
  readonly #store: Store;
  #codec: CursorCodec | undefined;
  readonly #sealed = new WeakMap<PlantPage, { readonly cursor: string; readonly owner: string | null; readonly tag: string | undefined }>();
  /**
   * Each known cursor under both its text and its memoKey (a cursor is base64url, a memoKey holds U+0000:
   * they never collide), in two generations of MEMO_ENTRIES / 2 cursors: when the newer fills, the
   * older is dropped whole. (Deleting a Map's oldest entry one at a time costs more: V8 skips the
   * deleted entries at the front on every `keys().next()` until it rehashes, and that eviction was 5%
   * of the server's CPU in a profile of PostgreSQL lists, which seal on every page.)
   */
  #known = new Map<string, Known>();
  #knownBefore = new Map<string, Known>();

  constructor(store: Store) {
    this.#store = store;
  }

  async #load(): Promise<CursorCodec> {
    return (this.#codec ??= new CursorCodec(await this.#store.cursorKey()));
  }

  #remember(known: Known): void {
    if (this.#known.size >= MEMO_ENTRIES) {
      this.#knownBefore = this.#known;
      this.#known = new Map();
    }
    this.#known.set(known.cursor, known);
    this.#known.set(known.key, known);
  }

  /** The cursor known by this text or memoKey; one found in the older generation moves to the newer (still in use). */
  #find(text: string): Known | undefined {
    const known = this.#known.get(text);
    if (known !== undefined) return known;
    const before = this.#knownBefore.get(text);
    if (before !== undefined) this.#remember(before);
    return before;
  }

  /** The position to continue after; 400 40003 for anything not sealed for this listing. */
  async open(cursor: string, scope: CursorScope): Promise<number> {
    const known = this.#find(cursor);
    if (known !== undefined && known.cursor === cursor && known.key === memoKey(known.position, scope)) return known.position;
    const position = (this.#codec ?? (await this.#load())).open(cursor, scope);
    if (position === null) {
      throw new ApiError(ERRORS.invalidQuery, `${ERRORS.invalidQuery.message}: cursor is not one this service issued for this listing`);
    }
    this.#remember({ cursor, key: memoKey(position, scope), position });
    return position;
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
    const key = memoKey(position, scope);
    let cursor = this.#find(key)?.cursor;
    if (cursor === undefined) {
      cursor = (this.#codec ?? (await this.#load())).seal(position, scope);
      this.#remember({ cursor, key, position });
    }
    this.#sealed.set(page, { cursor, owner: scope.owner, tag: scope.tag });
    return cursor;
  }
}
