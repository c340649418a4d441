/**
 * Reads the framing of a chunked request body (RFC 9112 §7.1) as its bytes arrive, to know the size its
 * chunks announce before their data comes: chunk-size in hex, optional `;extensions`, CRLF, the data,
 * CRLF, …, the `0` chunk, trailer fields, CRLF. It decides nothing else about the body.
 *
 * Node's parser reads the same bytes and has the last word on them. So this reader is stricter than
 * needed, never looser: whatever it does not recognise (a bare LF, a space after the size, …) makes it
 * stop reading (`unreadable`), never refuse. A refusal happens only on framing read exactly as Node's
 * parser reads it, when the sizes it announced add up to more than the limit.
 */

/** Where the reader is in the framing; one state per thing it expects next. */
type State =
  | 'sizeFirst' // the first hex digit of a chunk-size
  | 'size' // more hex digits, `;` or CR
  | 'extension' // a chunk extension, up to CR (a quoted string holds no CR)
  | 'sizeLf' // the LF ending a chunk-size line
  | 'data' // chunk data, `remaining` bytes of it
  | 'dataCr' // the CRLF after chunk data
  | 'dataLf'
  | 'trailerStart' // a trailer field line, or the CR of the empty line ending the body
  | 'trailer' // a trailer field line, up to CR
  | 'trailerLf'
  | 'lastLf'; // the LF of the empty line ending the body

/** What a read told: the body needs more bytes, ended at an index, or will be refused or not read. */
export type Progress = 'more' | 'oversize' | 'unreadable' | { readonly endsAt: number };

const CR = 0x0d;
const LF = 0x0a;
const SEMICOLON = 0x3b;

/** The value of a hex digit, or -1. */
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

export class ChunkedFraming {
  private state: State = 'sizeFirst';
  /** The size announced by the chunk being read (its digits so far, while in its size line). */
  private size = 0;
  /** Bytes of chunk data still to skip. */
  private remaining = 0;
  /** The sizes of the chunks whose size lines were read in full. */
  private announced = 0;

  constructor(private readonly limit: number) {}

  /**
   * Reads `bytes` from `from` on, the next bytes of the body. Refuses as soon as the digits of a size,
   * added to the sizes before, exceed the limit: more digits only make a size larger, so the body is
   * over the limit whatever follows (or its framing is faulty, and refused anyway).
   */
  read(bytes: Uint8Array, from = 0): Progress {
    for (let i = from; i < bytes.length; i++) {
      const c = bytes[i] as number;
      switch (this.state) {
        case 'sizeFirst':
        case 'size': {
          const digit = hexValue(c);
          if (digit >= 0) {
            this.size = this.size * 16 + digit;
            if (this.announced + this.size > this.limit) return 'oversize';
            this.state = 'size';
          } else if (this.state === 'sizeFirst') return 'unreadable';
          else if (c === SEMICOLON) this.state = 'extension';
          else if (c === CR) this.state = 'sizeLf';
          else return 'unreadable';
          break;
        }
        case 'extension':
          if (c === CR) this.state = 'sizeLf';
          else if (c === LF) return 'unreadable';
          break;
        case 'sizeLf':
          if (c !== LF) return 'unreadable';
          this.announced += this.size;
          this.remaining = this.size;
          this.state = this.size === 0 ? 'trailerStart' : 'data';
          this.size = 0;
          break;
        case 'data': {
          // Data is skipped, not looked at: only its length matters.
          const skipped = Math.min(this.remaining, bytes.length - i);
          this.remaining -= skipped;
          i += skipped - 1;
          if (this.remaining === 0) this.state = 'dataCr';
          break;
        }
        case 'dataCr':
          if (c !== CR) return 'unreadable';
          this.state = 'dataLf';
          break;
        case 'dataLf':
          if (c !== LF) return 'unreadable';
          this.state = 'sizeFirst';
          break;
        case 'trailerStart':
          if (c === CR) this.state = 'lastLf';
          else if (c === LF) return 'unreadable';
          else this.state = 'trailer';
          break;
        case 'trailer':
          if (c === CR) this.state = 'trailerLf';
          else if (c === LF) return 'unreadable';
          break;
        case 'trailerLf':
          if (c !== LF) return 'unreadable';
          this.state = 'trailerStart';
          break;
        case 'lastLf':
          return c === LF ? { endsAt: i + 1 } : 'unreadable';
      }
    }
    return 'more';
  }
}
