// The feed scenario's subscriber side reads its streams from raw sockets (node:net): a thousand
// node:http clients cost their process several times the CPU per chunk (an IncomingMessage, a stream,
// events), and that process shares the two cores with the server it measures. So it frames the
// responses itself: this file's reader takes a response's head and undoes chunked framing, and its
// parser reads server-sent events as the WHATWG HTML standard describes (9.2 Server-sent events).
import { StringDecoder } from 'node:string_decoder';

export interface Head {
  readonly status: number;
  /** Header names lower-cased; a repeated header's values joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
}

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

/** The head's text (status line and header lines, without the blank line) as a Head; throws when it is not one. */
export function parseHead(text: string): Head {
  const [statusLine = '', ...lines] = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine);
  if (!m) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine.slice(0, 80))}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`not a header line: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { status: Number(m[1]), headers };
}

type Framing =
  | { kind: 'head' }
  | { kind: 'size'; line: string }
  | { kind: 'data'; left: number }
  | { kind: 'data-end'; left: number } // the CRLF after a chunk's data
  | { kind: 'trailer'; line: string }
  | { kind: 'length'; left: number }
  | { kind: 'until-close' }
  | { kind: 'done' };

/**
 * One HTTP/1.1 response read from a socket's bytes, as they come: its head, then its body's bytes with
 * chunked framing undone (or up to content-length, or to the connection's end). `read` hands each piece
 * of body to `body` as a view of the bytes given (no copy) and returns the head once it is complete.
 */
export class ResponseReader {
  head: Head | undefined;
  private framing: Framing = { kind: 'head' };
  private headBytes: Buffer | undefined;

  /** Whether the body has ended by its framing (never for a body that runs until the connection closes). */
  get done(): boolean {
    return this.framing.kind === 'done';
  }

  read(bytes: Buffer, body: (piece: Buffer) => void): void {
    let at = 0;
    if (this.framing.kind === 'head') {
      const all = this.headBytes === undefined ? bytes : Buffer.concat([this.headBytes, bytes]);
      const end = all.indexOf(HEAD_END);
      if (end < 0) {
        this.headBytes = all;
        return;
      }
      this.headBytes = undefined;
      this.head = parseHead(all.toString('latin1', 0, end));
      this.framing = this.bodyFraming(this.head);
      bytes = all;
      at = end + HEAD_END.length;
    }
    while (at < bytes.length) {
      const f = this.framing;
      switch (f.kind) {
        case 'size':
        case 'trailer': {
          if (f.line.endsWith('\r') && bytes[at] === 10) { // a CRLF cut between two reads
            at += 1;
            this.endOfLine(f, f.line.slice(0, -1));
            break;
          }
          const eol = bytes.indexOf(CRLF, at);
          // A line cut between two reads (its CR at the end of the first one included) waits for the rest.
          const piece = bytes.toString('latin1', at, eol < 0 ? bytes.length : eol);
          if (eol < 0) {
            f.line += piece;
            return;
          }
          at = eol + 2;
          this.endOfLine(f, f.line + piece);
          break;
        }
        case 'data':
        case 'length': {
          const n = Math.min(f.left, bytes.length - at);
          body(bytes.subarray(at, at + n));
          at += n;
          f.left -= n;
          if (f.left === 0) this.framing = f.kind === 'data' ? { kind: 'data-end', left: 2 } : { kind: 'done' };
          break;
        }
        case 'data-end': {
          const n = Math.min(f.left, bytes.length - at);
          at += n;
          f.left -= n;
          if (f.left === 0) this.framing = { kind: 'size', line: '' };
          break;
        }
        case 'until-close':
          body(bytes.subarray(at));
          return;
        case 'done':
          return;
        case 'head':
          throw new Error('unreachable: the head is read above');
      }
    }
  }

  private bodyFraming(head: Head): Framing {
    if (/\bchunked\b/i.test(head.headers['transfer-encoding'] ?? '')) return { kind: 'size', line: '' };
    const length = head.headers['content-length'];
    if (length !== undefined) return Number(length) === 0 ? { kind: 'done' } : { kind: 'length', left: Number(length) };
    return head.status === 204 || head.status === 304 ? { kind: 'done' } : { kind: 'until-close' };
  }

  /** A complete line of a chunk's size (with its extensions) or of the trailer. */
  private endOfLine(f: { kind: 'size' | 'trailer' }, line: string): void {
    if (f.kind === 'trailer') {
      this.framing = line === '' ? { kind: 'done' } : { kind: 'trailer', line: '' };
      return;
    }
    const hex = /^\s*([0-9a-fA-F]+)/.exec(line);
    if (!hex) throw new Error(`not a chunk size: ${JSON.stringify(line.slice(0, 40))}`);
    const size = Number.parseInt(hex[1] as string, 16);
    this.framing = size === 0 ? { kind: 'trailer', line: '' } : { kind: 'data', left: size };
  }
}

export interface SseEvent {
  /** The event's type: its `event` field, or "message". */
  readonly type: string;
  readonly data: string;
  /** The last event id the stream has set, as the standard keeps it from one event to the next. */
  readonly lastEventId: string;
}

/**
 * Server-sent events from a body's bytes: UTF-8 decoded across reads, lines ended by CRLF, LF or CR
 * (a CRLF cut between two reads is still one line end), `event`, `data`, `id` and `retry` fields,
 * comments counted. An event is dispatched at a blank line when it has data, as a browser would.
 */
export class SseParser {
  /** Comment lines seen (the server's `: heartbeat`, for one). */
  comments = 0;
  /** The stream's `retry` field, in ms, once given. */
  retry: number | undefined;
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';
  private afterCr = false;
  private first = true;
  private type = '';
  private data: string[] = [];
  private lastEventId = '';

  constructor(private readonly dispatch: (event: SseEvent) => void) {}

  write(bytes: Buffer): void {
    this.text(this.decoder.write(bytes));
  }

  /** Text already decoded (tests, and the rest of the decoder at the end). */
  text(text: string): void {
    if (this.first && text.length > 0) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let at = 0;
    if (this.afterCr && text.charCodeAt(0) === 10) at = 1; // the LF of a CRLF cut after its CR
    this.afterCr = false;
    // The next CR is looked for again only once passed: a stream without CRs would be scanned to its
    // end at every line otherwise, which is quadratic in a read that holds many events.
    let cr = text.indexOf('\r', at);
    while (at < text.length) {
      const lf = text.indexOf('\n', at);
      if (cr >= 0 && cr < at) cr = text.indexOf('\r', at);
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0) {
        this.partial += text.slice(at);
        return;
      }
      const line = this.partial + text.slice(at, end);
      this.partial = '';
      if (text.charCodeAt(end) === 13) {
        if (end + 1 === text.length) this.afterCr = true;
        at = text.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
      } else {
        at = end + 1;
      }
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatchEvent();
      return;
    }
    if (line.charCodeAt(0) === 58) { // ':'
      this.comments++;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case 'event':
        this.type = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default: // other fields are ignored
    }
  }

  private dispatchEvent(): void {
    const { type, data } = this;
    this.type = '';
    this.data = [];
    if (data.length === 0) return;
    this.dispatch({ type: type === '' ? 'message' : type, data: data.join('\n'), lastEventId: this.lastEventId });
  }
}

/** What a stream's last bytes hold of the server's `end` event: its reason, or undefined when none is there. */
export function endReasonIn(tail: string): string | undefined {
  const at = tail.lastIndexOf('\nevent: end\n');
  if (at < 0) return undefined;
  const data = /\ndata: (.*)/.exec(tail.slice(at + 1))?.[1];
  try {
    return String((JSON.parse(data ?? '') as { reason?: unknown }).reason);
  } catch {
    return 'unreadable end event';
  }
}

/**
 * Counts `event: plant.created` lines in a stream's bytes without parsing its events: under wrk a
 * thousand streams carry over a million events a second, which parsing would take a core of the two
 * for, from the server it measures. Native searches for the line, the leading LF included (a JSON
 * `data` line cannot hold a raw LF, so only a field line matches; LF line ends only, as plantstore and
 * the bare server write them: others would count nothing and show as missing, never as more).
 * The last bytes are kept, copied: a match cut between two reads is found, and so is the `end` event
 * that comes last before the server closes the stream. A counter starts at an event's start, as if
 * after the blank line that ended the one before (whose LF the first match needs).
 */
export class EventCounter {
  static readonly PATTERN = Buffer.from('\nevent: plant.created\n');
  static readonly KEPT = 512;
  count = 0;
  private tail = Buffer.from('\n');

  write(piece: Buffer): void {
    const p = EventCounter.PATTERN;
    if (this.tail.length > 0) {
      // Only matches that start in the kept bytes and end in this piece: the others are counted below.
      const keep = this.tail.subarray(Math.max(0, this.tail.length - (p.length - 1)));
      const seam = Buffer.concat([keep, piece.subarray(0, p.length - 1)]);
      for (let at = seam.indexOf(p); at >= 0 && at < keep.length; at = seam.indexOf(p, at + 1)) {
        if (at + p.length > keep.length) this.count++;
      }
    }
    for (let at = piece.indexOf(p); at >= 0; at = piece.indexOf(p, at + p.length)) this.count++;
    const kept = EventCounter.KEPT;
    this.tail = piece.length >= kept
      ? Buffer.from(piece.subarray(piece.length - kept))
      : Buffer.from(Buffer.concat([this.tail, piece]).subarray(-kept));
  }

  /** The last bytes seen, as text (the end event's reason is read from them). */
  last(): string {
    return this.tail.toString('utf8');
  }
}

/**
 * The `id` member of a JSON object's text, as the digits written (an int64 as a bare number is exact
 * only as text: past 2^53 a double would round it), or undefined when the object has no integer `id`
 * at its top level. Strings are skipped, so a name holding `"id":` text is no id.
 */
export function plantIdOf(json: string): string | undefined {
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 123 || c === 91) depth++; // { [
    else if (c === 125 || c === 93) depth--; // } ]
    else if (c === 34) { // a string: a key when followed by a colon
      let j = i + 1;
      while (j < json.length && json.charCodeAt(j) !== 34) j += json.charCodeAt(j) === 92 ? 2 : 1;
      const key = json.slice(i + 1, j);
      i = j;
      if (depth !== 1 || key !== 'id') continue;
      const m = /^\s*:\s*(-?\d+)(?![\d.eE])/.exec(json.slice(j + 1, j + 40));
      if (m) return m[1];
    }
  }
  return undefined;
}
