import type { Snapshot, TransferableStore, TransferCounts } from '../store/transfer.js';
import { eventLine, headerLine, plantLine, tokenLine, webhookLine } from './format.js';
import { fileSink, streamSink, type Sink } from './sink.js';

export interface ExportSummary {
  readonly counts: TransferCounts;
  readonly exportedAt: Date;
  readonly seconds: number;
}

/** Told how far a transfer is (the CLI draws it on a terminal): the records in all, then each batch done. */
export interface TransferProgress {
  total(records: number): void;
  add(records: number): void;
}

/** Writes each batch's lines and counts them. */
async function writeAll<T>(batches: AsyncIterable<readonly T[]>, line: (record: T) => string, sink: Sink, progress?: TransferProgress): Promise<number> {
  let n = 0;
  for await (const batch of batches) {
    for (const record of batch) await sink.write(line(record));
    n += batch.length;
    progress?.add(batch.length);
  }
  return n;
}

/**
 * `plantstore export`: the header, then every plant, token, webhook endpoint and pending event of one
 * snapshot (docs/backups.md, "Moving between stores"). The sink is finished only when every line was written
 * and the lines matched the header's counts; otherwise it is aborted, and the error thrown.
 */
export async function exportStore(store: TransferableStore, sink: Sink, progress?: TransferProgress): Promise<ExportSummary> {
  const started = performance.now();
  try {
    const { counts, exportedAt } = await store.transfer().readSnapshot(async (s: Snapshot) => {
      await sink.write(headerLine(store.backend, s.takenAt, s.counts));
      progress?.total(s.counts.plants + s.counts.tokens + s.counts.webhooks + s.counts.events);
      const written: TransferCounts = {
        plants: await writeAll(s.plants(), plantLine, sink, progress),
        tokens: await writeAll(s.tokens(), tokenLine, sink, progress),
        webhooks: await writeAll(s.webhooks(), webhookLine, sink, progress),
        events: await writeAll(s.events(), eventLine, sink, progress),
      };
      // One snapshot: a difference means the store changed under it, and the file would not be one moment.
      for (const kind of Object.keys(written) as Array<keyof TransferCounts>) {
        if (written[kind] !== s.counts[kind]) {
          throw new Error(`the snapshot counted ${s.counts[kind]} ${kind} but ${written[kind]} were read; nothing was exported`);
        }
      }
      return { counts: written, exportedAt: s.takenAt };
    });
    await sink.finish();
    return { counts, exportedAt, seconds: (performance.now() - started) / 1000 };
  } catch (error) {
    await sink.abort();
    throw error;
  }
}

export function describeCounts(c: TransferCounts): string {
  return `${c.plants} plants, ${c.tokens} tokens, ${c.webhooks} webhook endpoints, ${c.events} pending webhook events`;
}

/**
 * The command: to `out` ("-" for stdout); notices (`log`) and progress go elsewhere (the CLI: stderr),
 * so that stdout carries the export alone. Returns the summary lines.
 */
export async function runExport(
  store: TransferableStore, out: string, log: (line: string) => void,
  { cwd, force = false, progress, stdout }: { cwd: string; force?: boolean; progress?: TransferProgress; stdout?: NodeJS.WritableStream },
): Promise<string[]> {
  const sink = out === '-' ? streamSink(stdout ?? process.stdout, 'stdout') : await fileSink(out, { cwd, force, log });
  const summary = await exportStore(store, sink, progress);
  const lines = [`exported ${describeCounts(summary.counts)} to ${sink.name} in ${summary.seconds.toFixed(1)} s (snapshot of ${summary.exportedAt.toISOString()})`];
  if (summary.counts.webhooks > 0) {
    lines.push(`${sink.name} holds the signing secrets of ${summary.counts.webhooks} webhook endpoints: keep it as private as the store itself`);
  }
  return lines;
}
