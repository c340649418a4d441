// The feed scenario's subscribers: one process holding every stream to GET /plants/events on raw
// sockets (bench/lib/sse.ts frames them), apart from the bench's process, whose creator stamps the
// creates' 200s. Both read CLOCK_MONOTONIC (monotonicMs), so an event's arrival here and its create's
// answer there are times on one clock. Each read of a socket is stamped once, as it is taken, before
// its events are parsed. The bench drives it over IPC (bench/lib/feed-clients.ts): open, mark, settle,
// collect, close, loop. TypeScript, unlike the other servers here, to share the lib's parsers; it
// runs under tsx as the bench does.
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import { monotonicMs } from '../lib/feed.js';
import { endReasonIn, EventCounter, plantIdOf, ResponseReader, SseParser, type SseEvent } from '../lib/sse.js';

/** Streams being opened at once: a thousand SYNs at once would overflow the server's accept queue. */
const OPENING_AT_ONCE = 64;
const OPEN_TIMEOUT_MS = 30_000;
/** Every socket's reads land here in turn (see openOne); each is parsed before the next read. */
const READ_BUFFER = Buffer.alloc(256 * 1024);
/** Counting, how long no more events must arrive before the counts are taken (see settle). */
const STABLE_MS = 300;

interface Stream {
  readonly index: number;
  readonly socket: Socket;
  readonly reader: ResponseReader;
  state: 'opening' | 'open' | 'refused' | 'closed';
  /** Events are parsed while recording (and until the ready event); under wrk they are only counted. */
  parser: SseParser;
  counter: EventCounter | undefined;
  /** Created events parsed since the mark (the counter's count when counting). */
  count: number;
  endReason?: string | undefined;
  refusal?: string;
}

export type Command =
  | { cmd: 'open'; url: string; tokens: string[]; count: number }
  | { cmd: 'mark'; record: boolean }
  | { cmd: 'settle'; expected: number; ids: string[] | undefined; timeoutMs: number; quietMs: number }
  | { cmd: 'collect' }
  | { cmd: 'close' }
  | { cmd: 'loop' };

export interface Opened { open: number; refused: Record<string, number>; firstRefusal: string | undefined; ms: number }
export interface Settled {
  ms: number;
  /** Whether the streams had what was asked. */
  complete: boolean;
  /** What the streams marked (open, or closed since) lack of `expected`, added up: (event, stream) pairs missing. */
  missing: number;
}
export interface Collected {
  arrivals: Map<string, Float64Array>;
  min: number;
  max: number;
  open: number;
  /** Streams the server ended, by the reason its `end` event gave. */
  ends: Record<string, number>;
  /** Streams that closed without an `end` event. */
  dropped: number;
}
export interface Loop { delayP99Ms: number; utilization: number }

const countOf = (s: Stream): number => s.counter?.count ?? s.count;

class Subscribers {
  private streams: Stream[] = [];
  private recording: Map<string, Float64Array> | undefined;
  /** Recording: how many streams each plant's event has reached. */
  private arrived = new Map<string, number>();
  /** When the read being handled was taken. */
  private now = 0;
  private ends: Record<string, number> = {};
  private dropped = 0;
  private readonly delay = monitorEventLoopDelay({ resolution: 10 });
  private elu: EventLoopUtilization = performance.eventLoopUtilization();

  constructor() {
    this.delay.enable();
  }

  private get open(): Stream[] {
    return this.streams.filter((s) => s.state === 'open');
  }

  async openStreams(url: string, tokens: readonly string[], count: number): Promise<Opened> {
    const started = monotonicMs();
    const { hostname, port } = new URL(url);
    // Indexes continue after the streams already there, so arrivals keep one slot per stream.
    const first = this.streams.length;
    const fresh: Stream[] = [];
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const i = next++;
        // Round robin: token t holds streams t, t + T, t + 2T…, never more than its share.
        fresh.push(await this.openOne(first + i, hostname, Number(port), tokens[i % tokens.length] as string));
      }
    };
    await Promise.all(Array.from({ length: Math.min(OPENING_AT_ONCE, count) }, worker));
    this.streams.push(...fresh.sort((a, b) => a.index - b.index));
    const refused: Record<string, number> = {};
    for (const s of fresh) if (s.state !== 'open') refused[s.refusal ?? 'closed'] = (refused[s.refusal ?? 'closed'] ?? 0) + 1;
    const firstRefusal = fresh.find((s) => s.state !== 'open')?.refusal;
    return { open: fresh.filter((s) => s.state === 'open').length, refused, firstRefusal, ms: monotonicMs() - started };
  }

  private openOne(index: number, host: string, port: number, token: string): Promise<Stream> {
    let read: (n: number) => void = () => {};
    // onread: each read lands in one buffer shared by every socket and is handled at once, without a
    // Readable stream's buffering and 'data' events. Never paused: reading at once is what is measured.
    const onread = { buffer: READ_BUFFER, callback: (n: number) => (read(n), true) };
    const socket = connect({ host, port, noDelay: true, onread });
    const stream: Stream = {
      index, socket, reader: new ResponseReader(), state: 'opening', parser: new SseParser(() => {}), counter: undefined, count: 0,
    };
    return new Promise((resolve) => {
      const timer = setTimeout(() => refuse('no ready event within 30 s'), OPEN_TIMEOUT_MS);
      let errorBody = '';
      const refuse = (why: string) => {
        clearTimeout(timer);
        if (stream.state !== 'opening') return;
        stream.state = 'refused';
        stream.refusal = why;
        socket.destroy();
        resolve(stream);
      };
      stream.parser = this.parserFor(stream, () => {
        clearTimeout(timer);
        stream.state = 'open';
        resolve(stream);
      });
      read = (n: number) => {
        this.now = monotonicMs();
        const bytes = READ_BUFFER.subarray(0, n);
        try {
          stream.reader.read(bytes, (piece) => {
            if (stream.reader.head?.status !== 200) errorBody += piece.toString('utf8');
            else if (stream.counter) stream.counter.write(piece);
            else stream.parser.write(piece);
          });
        } catch (error) {
          refuse(`unreadable response: ${(error as Error).message}`);
          return;
        }
        const head = stream.reader.head;
        if (head && head.status !== 200 && stream.reader.done) refuse(`${head.status} ${errorBody.slice(0, 300)}`);
      };
      socket.on('error', (error) => refuse(`socket: ${error.message}`));
      socket.on('close', () => {
        const head = stream.reader.head;
        refuse(head && head.status !== 200 ? `${head.status} ${errorBody.slice(0, 300)}` : 'closed before its ready event');
        if (stream.state !== 'open') return;
        stream.state = 'closed';
        if (stream.counter) stream.endReason ??= endReasonIn(stream.counter.last());
        if (stream.endReason !== undefined) this.ends[stream.endReason] = (this.ends[stream.endReason] ?? 0) + 1;
        else this.dropped++;
      });
      socket.write(`GET /plants/events HTTP/1.1\r\nhost: ${host}:${port}\r\nauthorization: Bearer ${token}\r\n` +
        'accept: text/event-stream\r\n\r\n');
    });
  }

  /** A parser of `stream`'s events, from an event's start; `ready`: what its ready event does. */
  private parserFor(stream: Stream, ready: () => void): SseParser {
    return new SseParser((event) => {
      if (stream.state === 'opening' && event.type === 'ready') ready();
      else this.onEvent(stream, event);
    });
  }

  private onEvent(stream: Stream, event: SseEvent): void {
    if (event.type === 'plant.created') {
      stream.count++;
      if (this.recording === undefined) return;
      const id = plantIdOf(event.data);
      if (id === undefined) return;
      let times = this.recording.get(id);
      if (times === undefined) {
        times = new Float64Array(this.streams.length).fill(NaN);
        this.recording.set(id, times);
      }
      if (!Number.isNaN(times[stream.index])) return;
      times[stream.index] = this.now;
      this.arrived.set(id, (this.arrived.get(id) ?? 0) + 1);
    } else if (event.type === 'end') {
      try {
        stream.endReason = String((JSON.parse(event.data) as { reason?: unknown }).reason);
      } catch {
        stream.endReason = 'unreadable end event';
      }
    }
  }

  /**
   * Counts restart at zero; with `record`, each created event's arrival is kept, per plant and stream,
   * else events are only counted. A mark comes between loads, once the streams are quiet: a parser
   * started afresh begins at an event's start.
   */
  mark(record: boolean): void {
    for (const s of this.streams) {
      s.count = 0;
      s.counter = record ? undefined : new EventCounter();
      if (record) s.parser = this.parserFor(s, () => {});
    }
    this.recording = record ? new Map() : undefined;
    this.arrived = new Map();
    this.ends = {};
    this.dropped = 0;
  }

  /**
   * Until the streams have what was asked: recording, every open stream the event of each of `ids`;
   * counting, at least `expected` created events each, and no more arriving for STABLE_MS (creates
   * wrk left in flight when it stopped are committed and sent after the ones it saw answered). Or
   * until no stream has had one more for `quietMs` (what is missing then is not coming), or `timeoutMs`.
   * `ms`: when the streams first had what was asked. `missing`, counting: what each stream lacks of
   * the most any open stream has (and of `expected`), added up, since every stream is sent the same
   * events; closed streams lack what came after they closed.
   */
  async settle(expected: number, ids: readonly string[] | undefined, timeoutMs: number, quietMs: number): Promise<Settled> {
    const started = monotonicMs();
    let total = -1;
    let moved = started;
    let completeAt: number | undefined;
    for (;;) {
      const now = monotonicMs();
      const open = this.open;
      const complete = ids === undefined
        ? open.every((s) => countOf(s) >= expected)
        : ids.every((id) => (this.arrived.get(id) ?? 0) >= this.streams.length || this.hasEvery(id, open));
      completeAt = complete ? (completeAt ?? now) : undefined;
      const counted = this.streams.reduce((n, s) => n + countOf(s), 0);
      if (counted !== total) [total, moved] = [counted, now];
      const stable = ids !== undefined || now - moved >= STABLE_MS;
      if ((complete && stable) || now - started > timeoutMs || now - moved > quietMs) {
        const marked = this.streams.filter((s) => s.state === 'open' || s.state === 'closed');
        const target = Math.max(expected, ...open.map(countOf));
        const missing = ids === undefined ? marked.reduce((n, s) => n + target - countOf(s), 0) : 0;
        return { ms: (completeAt ?? now) - started, complete, missing };
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Whether every stream of `open` has had the event of `id` (the slow path, once a stream has closed). */
  private hasEvery(id: string, open: readonly Stream[]): boolean {
    const times = this.recording?.get(id);
    return times !== undefined && open.every((s) => !Number.isNaN(times[s.index]));
  }

  collect(): Collected {
    const counts = this.open.map(countOf);
    return {
      arrivals: this.recording ?? new Map(), min: Math.min(...counts), max: Math.max(...counts), open: counts.length,
      ends: this.ends, dropped: this.dropped,
    };
  }

  async close(): Promise<void> {
    const closing = this.streams.map((s) => (s.socket.closed ? undefined : new Promise((resolve) => s.socket.once('close', resolve))));
    for (const s of this.streams) {
      s.state = 'closed';
      s.socket.destroy();
    }
    await Promise.all(closing);
    this.streams = [];
  }

  /** The event loop since the last call: its delay's p99 and how busy it was. */
  loop(): Loop {
    const elu = performance.eventLoopUtilization(this.elu);
    this.elu = performance.eventLoopUtilization();
    const delayP99Ms = this.delay.percentile(99) / 1e6;
    this.delay.reset();
    return { delayP99Ms, utilization: elu.utilization };
  }
}

const subscribers = new Subscribers();

async function handle(command: Command): Promise<unknown> {
  switch (command.cmd) {
    case 'open': return subscribers.openStreams(command.url, command.tokens, command.count);
    case 'mark': return subscribers.mark(command.record);
    case 'settle': return subscribers.settle(command.expected, command.ids, command.timeoutMs, command.quietMs);
    case 'collect': return subscribers.collect();
    case 'close': return subscribers.close();
    case 'loop': return subscribers.loop();
  }
}

process.on('message', (message: { id: number; command: Command }) => {
  handle(message.command).then(
    (result) => process.send?.({ id: message.id, result }),
    (error: unknown) => process.send?.({ id: message.id, error: String((error as Error)?.stack ?? error) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true });
