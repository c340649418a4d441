import type { Output } from './io.js';

// Progress of the long commands (export, import, backup) on stderr, so that stdout (an export to
// stdout) never carries any of it. Written here rather than taken from a library: the kept ones
// (cli-progress, ora, listr2) are larger than this file and bring dependencies, for one redrawn line.
//
// On a terminal: one line, redrawn in place at most every REDRAW_MS, with the count, the rate, the
// time elapsed and, where the total is known, an estimate of the time left. Anywhere else (a file, a
// pipe, a process manager's log): nothing until the summary, which a log wants one line of. --quiet:
// not even the summary; errors are still printed, by the command's caller.

/** At most this often: a terminal redrawn more often only flickers, and each redraw costs a write. */
const REDRAW_MS = 250;

/** What the transfer and backup code tells of its progress (src/transfer/, store/sqlite/backup.ts). */
export interface ProgressSink {
  /** The amount of work, once known. */
  total(n: number): void;
  /** `n` more done. */
  add(n: number): void;
  /** What is being done now, when it cannot be counted ("checking the copy"). */
  phase(text: string): void;
}

export interface Progress extends ProgressSink {
  /** A notice that stays (a conflict skipped): above the progress line on a terminal; not with --quiet. */
  log(line: string): void;
  /** The work is over: the progress line is cleared, then `summary` printed (not with --quiet). */
  done(summary: readonly string[]): void;
  /** The work failed: the progress line is cleared, so that the error starts on a line of its own. */
  stop(): void;
}

export interface ProgressOptions {
  /** "exporting", "importing", "backing up". */
  readonly label: string;
  /** What is counted: "records", "pages". */
  readonly unit: string;
  readonly quiet: boolean;
  /** stderr: a terminal (isTTY) gets the redrawn line. */
  readonly stream: Output;
  readonly now?: () => number;
}

const grouped = (n: number) => Math.round(n).toLocaleString('en-US');

/** 0:07, 12:30, 1:02:03. */
export function clock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const [h, m, sec] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  const mm = h > 0 ? String(m).padStart(2, '0') : String(m);
  return `${h > 0 ? `${h}:` : ''}${mm}:${String(sec).padStart(2, '0')}`;
}

/** The progress line: "importing: 45,000 of 100,000 records (45%), 18,000/s, 0:02 elapsed, about 0:03 left". */
export function progressLine(label: string, unit: string, done: number, total: number | undefined, elapsedMs: number, phase?: string): string {
  if (phase !== undefined) return `${label}: ${phase}, ${clock(elapsedMs)} elapsed`;
  const rate = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
  const count = total === undefined ? `${grouped(done)} ${unit}` : `${grouped(done)} of ${grouped(total)} ${unit} (${total === 0 ? 100 : Math.floor((done * 100) / total)}%)`;
  const left = total !== undefined && rate > 0 && done < total ? `, about ${clock(((total - done) / rate) * 1000)} left` : '';
  return `${label}: ${count}, ${grouped(rate)}/s, ${clock(elapsedMs)} elapsed${left}`;
}

export function startProgress({ label, unit, quiet, stream, now = () => performance.now() }: ProgressOptions): Progress {
  const terminal = !quiet && stream.isTTY === true;
  const started = now();
  let done = 0;
  let total: number | undefined;
  let phase: string | undefined;
  let drawnAt = Number.NEGATIVE_INFINITY;
  let shown = false;
  const draw = (force = false) => {
    if (!terminal || (!force && now() - drawnAt < REDRAW_MS)) return;
    drawnAt = now();
    const line = progressLine(label, unit, done, total, drawnAt - started, phase);
    const width = (stream.columns || 80) - 1;
    stream.write(`\r${line.length > width ? line.slice(0, width) : line}\x1b[K`);
    shown = true;
  };
  const clear = () => {
    if (shown) stream.write('\r\x1b[K');
    shown = false;
  };
  // Keeps the elapsed time moving while the count stands still (a slow batch); never holds the process.
  const timer = terminal ? setInterval(() => draw(true), 1000) : undefined;
  timer?.unref();
  const end = () => {
    clearInterval(timer);
    clear();
  };
  draw(true);
  return {
    total(n) {
      total = n;
      draw(true);
    },
    add(n) {
      done += n;
      phase = undefined;
      draw();
    },
    phase(text) {
      phase = text;
      draw(true);
    },
    log(line) {
      if (quiet) return;
      clear();
      stream.write(`${line}\n`);
      draw(true);
    },
    done(summary) {
      end();
      if (!quiet) for (const line of summary) stream.write(`${line}\n`);
    },
    stop: end,
  };
}
