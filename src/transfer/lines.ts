import { isUtf8 } from 'node:buffer';
import { FormatError } from './decode.js';

/** No line plantstore writes comes near this; a longer one is refused rather than buffered. */
export const MAX_LINE_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

/**
 * Which of the complete lines in `bytes` (0 for the first) is the first that is not valid UTF-8. Only
 * asked once a run of lines failed the check as a whole; a "\n" byte never occurs inside a character,
 * so each line can be checked on its own.
 */
function firstBadLine(bytes: Buffer): number {
  for (let line = 0, start = 0; ; line++) {
    const end = bytes.indexOf(NEWLINE, start);
    if (!isUtf8(bytes.subarray(start, end < 0 ? bytes.length : end)) || end < 0) return line;
    start = end + 1;
  }
}

/**
 * The lines of a UTF-8 stream, numbered from 1, without their "\n". Bytes are checked before they are
 * decoded: decoding invalid UTF-8 would silently turn it into U+FFFD, and a string must arrive byte for
 * byte or not at all. Whole runs of complete lines are checked and decoded at once (a line is never
 * split inside a character that way); memory stays within one chunk and one unfinished line.
 */
export async function* readLines(input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>): AsyncGenerator<{ text: string; number: number }> {
  let carry: Buffer = Buffer.alloc(0);
  let number = 0;
  const decode = (bytes: Buffer) => {
    if (!isUtf8(bytes)) throw new FormatError(`line ${number + 1 + firstBadLine(bytes)} is not valid UTF-8`);
    return bytes.toString('utf8');
  };
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const last = bytes.lastIndexOf(NEWLINE);
    if (last < 0) {
      carry = Buffer.concat([carry, bytes]);
      if (carry.length > MAX_LINE_BYTES) throw new FormatError(`line ${number + 1} is longer than ${MAX_LINE_BYTES} bytes`);
      continue;
    }
    const lines = decode(Buffer.concat([carry, bytes.subarray(0, last)])).split('\n');
    carry = Buffer.from(bytes.subarray(last + 1));
    for (const text of lines) {
      number++;
      if (text.length * 3 > MAX_LINE_BYTES && Buffer.byteLength(text) > MAX_LINE_BYTES) throw new FormatError(`line ${number} is longer than ${MAX_LINE_BYTES} bytes`);
      yield { text, number };
    }
  }
  // The last line may lack its "\n" (an edited file); a line cut short fails as JSON where it is read.
  if (carry.length > 0) yield { text: decode(carry), number: number + 1 };
}
