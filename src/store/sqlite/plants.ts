import { plantOf, plantOfColumns, samePlant, type NewPlant } from '../../domain/plant.js';
import type Database from './driver.js';
import { storeError } from './errors.js';
import { PageReader } from './lists.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';
import type { SqliteWebhookStatements } from './webhook-statements.js';
import { assertReadable, type CacheablePlants, type CreateOutcome, type ListQuery, type PlantPage } from '../store.js';

/**
 * The plants facet on SQLite: creates and deletes in the write queue's group commits, lists read at
 * once (in WAL mode a read waits for no writer). It tells the list cache whether reads are refused now.
 */
export class SqlitePlants implements CacheablePlants {
  readonly #db: Database.Database;
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  readonly #insertPlant: Database.Statement<[string, bigint, string, string | null]>;
  readonly #findPlant: Database.Statement<[string, bigint], { name: string; tag: string | null }>;
  readonly #deletePlant: Database.Statement<[string, bigint]>;
  readonly #pages: PageReader;

  constructor(
    db: Database.Database, state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements, deletePlant: string,
  ) {
    this.#db = db;
    this.#state = state;
    this.#writes = writes;
    this.#webhooks = webhooks;
    this.#insertPlant = db.prepare(
      'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING',
    );
    this.#findPlant = db.prepare('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
    this.#deletePlant = db.prepare(deletePlant);
    this.#pages = new PageReader(db);
  }

  [assertReadable](): void {
    this.#state.assertReadable();
  }

  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return this.#writes.add(() => {
      if (this.#insertPlant.run(owner, plant.id, plant.name, plant.tag ?? null).changes === 1) {
        this.#queueEvents(owner, plant);
        return 'created';
      }
      // Same transaction as the insert, so the row that conflicted is still there.
      const stored = this.#findPlant.get(owner, plant.id);
      if (!stored) throw new Error('conflicting plant row not found');
      return samePlant(plantOfColumns(stored), plantOf(plant)) ? 'replayed' : 'conflict';
    });
  }

  /**
   * The outbox, in the create's transaction: the events commit with the plant or not at all. A failed
   * statement rolls back only itself while the batch commits (see WriteQueue), so when queueing fails the
   * plant just inserted is removed again before the create fails. Events queued wake the dispatcher
   * once the batch is committed (WriteQueue.wakeAfterCommit).
   */
  #queueEvents(owner: string, plant: NewPlant): void {
    try {
      if (this.#webhooks.queueEvents(owner, plant)) this.#writes.wakeAfterCommit();
    } catch (error) {
      if (this.#db.inTransaction) this.#deletePlant.run(owner, plant.id);
      throw error;
    }
  }

  /** The list cache is wrappers/list-cache.ts's, around this facet. */
  cachedPage(): undefined {
    return undefined;
  }

  async listPlants(query: ListQuery): Promise<PlantPage> {
    this.#state.assertReadable();
    try {
      return this.#pages.read(query);
    } catch (error) {
      throw storeError(error);
    }
  }

  deletePlant(owner: string, id: bigint): Promise<boolean> {
    return this.#writes.add(() => this.#deletePlant.run(owner, id).changes === 1);
  }
}
