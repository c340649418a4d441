import { open, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { BatchResult, Conflict, StoreTransfer, TransferableStore } from '../store/transfer.js';
import { decodeHeader, decodeLine, FormatError, type Decoded } from './decode.js';
import { COUNT_OF, KINDS, type Header, type Kind } from './format.js';
import type { TransferProgress } from './export.js';
import { readLines } from './lines.js';

/** Records per transaction: one commit (and on SQLite one fsync) per thousand rows. */
export const IMPORT_BATCH_ROWS = 1000;
/** Conflicts listed one by one; past this only counted. */
const CONFLICTS_SHOWN = 20;

export interface ImportOptions {
  readonly skipConflicts: boolean;
  /** Receives notices as the import goes (conflicts skipped, tokens given new ids). */
  readonly log: (line: string) => void;
  /** Told the records in all (the header's counts), then each batch written. */
  readonly progress?: TransferProgress | undefined;
}

export interface KindTally {
  imported: number;
  unchanged: number;
  /** Conflicts skipped (--skip-conflicts). */
  skipped: number;
}

export interface ImportSummary {
  readonly header: Header;
  readonly tallies: Readonly<Record<Kind, KindTally>>;
  readonly seconds: number;
}

/** A record's key is stored with other content: the import stopped (without --skip-conflicts). */
export class ImportConflictError extends Error {
  readonly conflicts: readonly Conflict[];

  constructor(conflicts: readonly Conflict[], firstLine: number, lastLine: number) {
    const shown = conflicts.slice(0, CONFLICTS_SHOWN).map(conflictText);
    const more = conflicts.length > CONFLICTS_SHOWN ? [`… and ${conflicts.length - CONFLICTS_SHOWN} more`] : [];
    super(
      `${[...shown, ...more].join('\n')}\nthe store already holds ${conflicts.length === 1 ? 'that record' : 'those records'} ` +
        `with other content: the import stopped, lines ${firstLine} to ${lastLine} were not imported (the lines before them ` +
        'were). Run it again with --skip-conflicts to keep what the store has and import the rest.',
    );
    this.conflicts = conflicts;
  }
}

function conflictText(c: Conflict): string {
  return `conflict: ${c.record} is in the store with another ${c.fields.join(', ')}`;
}

type Pending =
  | { kind: 'plant'; records: Array<Extract<Decoded, { kind: 'plant' }>['record']> }
  | { kind: 'token'; records: Array<Extract<Decoded, { kind: 'token' }>['record']> }
  | { kind: 'webhook'; records: Array<Extract<Decoded, { kind: 'webhook' }>['record']> }
  | { kind: 'event'; records: Array<Extract<Decoded, { kind: 'event' }>['record']> };

function write(transfer: StoreTransfer, batch: Pending, skip: boolean): Promise<BatchResult> {
  switch (batch.kind) {
    case 'plant':
      return transfer.importPlants(batch.records, skip);
    case 'token':
      return transfer.importTokens(batch.records, skip);
    case 'webhook':
      return transfer.importWebhooks(batch.records, skip);
    case 'event':
      return transfer.importEvents(batch.records, skip);
  }
}

/**
 * `plantstore import`: checks the header, then reads, checks and writes the records in batches, in file
 * order. Each batch commits on its own: a failure leaves the batches before it in the store, and since
 * a record already stored with the same content is left alone, running the same import again finishes
 * the job. A file cut short is found when it ends (the header's counts), after what it held was written.
 */
export async function importStore(store: TransferableStore, input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>, options: ImportOptions): Promise<ImportSummary> {
  return importRecords(store, await readImportHeader(input), options);
}

/** An export with its header read and checked, its records still to read. */
export interface ImportSource {
  readonly header: Header;
  readonly lines: AsyncGenerator<{ text: string; number: number }>;
}

/**
 * Reads and checks the header line: a file that is not an export is refused before the store is
 * opened, so that it creates no store.
 */
export async function readImportHeader(input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>): Promise<ImportSource> {
  const lines = readLines(input);
  const first = await lines.next();
  if (first.done === true) throw new FormatError('the file is empty: it is not a plantstore export');
  return { header: decodeHeader(first.value.text), lines };
}

async function importRecords(store: TransferableStore, { header, lines }: ImportSource, options: ImportOptions): Promise<ImportSummary> {
  const started = performance.now();
  const transfer = store.transfer();
  const tallies = Object.fromEntries(KINDS.map((k) => [k, { imported: 0, unchanged: 0, skipped: 0 }])) as Record<Kind, KindTally>;
  const read: Record<Kind, number> = { plant: 0, token: 0, webhook: 0, event: 0 };
  let shown = 0;
  let batch: Pending | undefined;
  let batchFirstLine = 0;
  let lastLine = 1;
  options.progress?.total(KINDS.reduce((sum, k) => sum + header.counts[COUNT_OF[k]], 0));

  const flush = async () => {
    if (batch === undefined || batch.records.length === 0) return;
    const result = await write(transfer, batch, options.skipConflicts);
    if (result.conflicts.length > 0 && !options.skipConflicts) throw new ImportConflictError(result.conflicts, batchFirstLine, lastLine);
    const tally = tallies[batch.kind];
    tally.imported += result.imported;
    tally.unchanged += result.unchanged;
    tally.skipped += result.conflicts.length;
    for (const c of result.conflicts) if (shown++ < CONFLICTS_SHOWN) options.log(`skipped ${conflictText(c)}`);
    for (const r of result.renumbered) options.log(`token ${r.from} is token ${r.to} in this store: its id was another token's here`);
    options.progress?.add(batch.records.length);
    batch = undefined;
  };

  for await (const { text, number } of lines) {
    const decoded = decodeLine(text, number);
    const kind = decoded.kind;
    if (batch !== undefined && KINDS.indexOf(kind) < KINDS.indexOf(batch.kind)) {
      throw new FormatError(`line ${number}: a ${kind} after the ${batch.kind} lines; an export holds ${KINDS.join(', ')} lines in that order`);
    }
    if (++read[kind] > header.counts[COUNT_OF[kind]]) {
      throw new FormatError(`line ${number}: more ${COUNT_OF[kind]} than the ${header.counts[COUNT_OF[kind]]} the header announces`);
    }
    if (batch !== undefined && (batch.kind !== kind || batch.records.length >= IMPORT_BATCH_ROWS)) await flush();
    if (batch === undefined) {
      batch = { kind, records: [] } as Pending;
      batchFirstLine = number;
    }
    (batch.records as Array<typeof decoded.record>).push(decoded.record);
    lastLine = number;
  }
  await flush();
  if (shown > CONFLICTS_SHOWN) options.log(`… and ${shown - CONFLICTS_SHOWN} more conflicts skipped`);
  for (const kind of KINDS) {
    const announced = header.counts[COUNT_OF[kind]];
    if (read[kind] < announced) {
      throw new FormatError(
        `the file ends after ${read[kind]} of the ${announced} ${COUNT_OF[kind]} its header announces: it was cut short. ` +
          'What it held was imported; importing the whole file again completes the import.',
      );
    }
  }
  return { header, tallies, seconds: (performance.now() - started) / 1000 };
}

export function describeImport({ tallies }: ImportSummary, skipConflicts: boolean): string[] {
  const names: Record<Kind, string> = { plant: 'plants', token: 'tokens', webhook: 'webhook endpoints', event: 'pending webhook events' };
  return KINDS.map((k) => {
    const t = tallies[k];
    const skipped = skipConflicts ? `, ${t.skipped} conflicts skipped` : '';
    return `  ${names[k]}: ${t.imported} imported, ${t.unchanged} already present${skipped}`;
  });
}

/** The file to import, opened before the store is (so a mistyped name creates no empty store); "-" is stdin. */
/** The file to import (relative to `cwd`, the command's working directory), or stdin for `-`. */
export async function openImportFile(
  path: string, stdin: () => NodeJS.ReadableStream, cwd: string,
): Promise<{ readonly name: string; readonly input: AsyncIterable<Buffer>; close(): Promise<void> }> {
  if (path === '-') return { name: 'stdin', input: stdin() as AsyncIterable<Buffer>, close: async () => undefined };
  let handle: FileHandle;
  const target = resolve(cwd, path);
  try {
    handle = await open(target, 'r');
  } catch (error) {
    // The system's message quotes the path opened: the file is named there too as the user gave it.
    throw new Error(`cannot read ${path}: ${(error as Error).message.replace(`'${target}'`, `'${path}'`)}`);
  }
  return { name: path, input: handle.createReadStream({ autoClose: false }), close: () => handle.close() };
}

/** The command: the import; returns its summary lines. */
export async function runImport(store: TransferableStore, name: string, source: ImportSource, options: ImportOptions): Promise<string[]> {
  const summary = await importRecords(store, source, options);
  const { backend, exportedAt } = summary.header;
  return [`imported ${name} (exported from ${backend} at ${exportedAt}) in ${summary.seconds.toFixed(1)} s:`, ...describeImport(summary, options.skipConflicts)];
}
