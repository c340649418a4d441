/**
 * A server-sent events parser, as the WHATWG HTML standard's "Interpreting an event stream" (§9.2.6)
 * says, for a stream read with fetch: a browser's EventSource cannot send an Authorization header, and
 * Node.js has none. Bytes go in as they arrive, cut anywhere (inside a line, a CRLF, a UTF-8 sequence);
 * events come out as their blank line arrives.
 */

/** One dispatched event, as EventSource's MessageEvent carries it. */
export interface ServerSentEvent {
  /** The `event:` field, `message` when the event had none. */
  readonly type: string;
  /** The `data:` lines, joined with LF. */
  readonly data: string;
  /** The last `id:` seen on the stream up to this event (ids persist from one event to the next). */
  readonly lastEventId: string;
}

const LF = 0x0a;
const CR = 0x0d;
/** A `retry:` value is ASCII digits only; anything else is ignored (§9.2.6). */
const DIGITS = /^[0-9]+$/;

export class SseParser {
  // fatal: false: a malformed sequence becomes U+FFFD, as the standard's UTF-8 decode does; the
  // decoder's default drops one leading BOM, which the standard also says to ignore.
  readonly #decoder = new TextDecoder('utf-8');
  /** Text of the line not yet ended. */
  #line = '';
  /** The previous piece ended with CR: an LF starting this one is the same line end. */
  #afterCr = false;
  #data = '';
  #hasData = false;
  #type = '';
  #idBuffer = '';
  #lastEventId = '';
  #retryMs: number | undefined;

  /** The last `retry:` value the stream gave (the reconnection time, ms), if any. */
  get retryMs(): number | undefined {
    return this.#retryMs;
  }

  /** The last event id as of the last event dispatched (or blank line): what to resume from. */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** Reads the next piece of the stream; returns the events it completed, in order. */
  push(bytes: Uint8Array): ServerSentEvent[] {
    return this.#text(this.#decoder.decode(bytes, { stream: true }));
  }

  /**
   * The stream ended: a UTF-8 sequence left open becomes U+FFFD, and an event without its closing blank
   * line is discarded, as the standard says ("the incomplete event is not dispatched").
   */
  end(): ServerSentEvent[] {
    const events = this.#text(this.#decoder.decode());
    this.#line = '';
    this.#data = '';
    this.#hasData = false;
    this.#type = '';
    return events;
  }

  #text(text: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    let start = 0;
    if (this.#afterCr && text.length > 0) {
      if (text.charCodeAt(0) === LF) start = 1;
      this.#afterCr = false;
    }
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code !== LF && code !== CR) continue;
      this.#lineEnded(this.#line + text.slice(start, i), events);
      this.#line = '';
      if (code === CR) {
        if (i + 1 === text.length) this.#afterCr = true;
        else if (text.charCodeAt(i + 1) === LF) i++;
      }
      start = i + 1;
    }
    this.#line += text.slice(start);
    return events;
  }

  #lineEnded(line: string, events: ServerSentEvent[]): void {
    if (line === '') {
      this.#dispatch(events);
      return;
    }
    if (line.startsWith(':')) return; // a comment: a heartbeat, or anything else a server says
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.#type = value;
        break;
      case 'data':
        this.#data += this.#hasData ? `\n${value}` : value;
        this.#hasData = true;
        break;
      case 'id':
        if (!value.includes('\0')) this.#idBuffer = value;
        break;
      case 'retry':
        if (DIGITS.test(value)) this.#retryMs = Number(value);
        break;
      default: // another field is ignored
    }
  }

  #dispatch(events: ServerSentEvent[]): void {
    this.#lastEventId = this.#idBuffer;
    if (this.#hasData) events.push({ type: this.#type === '' ? 'message' : this.#type, data: this.#data, lastEventId: this.#lastEventId });
    this.#data = '';
    this.#hasData = false;
    this.#type = '';
  }
}
