// Entry ids to entry rows: an open-addressing table of entry indexes, keyed by the id's UTF-16
// units (FNV-1a). It replaces a Map<string, EntryRec>, whose insertions and lookups took about
// 2 µs each at a few million short hex ids (V8's string hashing of such keys collides), making
// a file of millions of tiny entries take tens of seconds to index; this takes a few hundred ms.
import type { EntryTable } from "./entries.ts";

function hashOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  // A final mix, so ids that differ only in their last units spread over the whole table.
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

/**
 * The winning row of each id: a later line with the same id replaces the earlier (SM:694).
 * It can grow: a follow adds the ids of appended rows (tree.ts does so only for ids not yet in
 * it), and a parse of an earlier snapshot sharing it passes its row count to `get`, so rows it
 * does not have are not found.
 */
export class IdIndex {
  readonly #ids: string[];
  #table: Int32Array;
  #mask: number;
  #size = 0;

  /** Indexes the rows of `entries` (every entry line in file order, duplicates included). */
  constructor(entries: EntryTable) {
    this.#ids = entries.ids;
    let slots = 16;
    while (slots < entries.count * 2) slots *= 2;
    this.#table = new Int32Array(slots).fill(-1);
    this.#mask = slots - 1;
    for (let i = 0; i < entries.count; i++) this.#put(i);
  }

  /** How many distinct ids (in all rows added so far). */
  get size(): number {
    return this.#size;
  }

  /** The row of the entry with this id among the first `rows` rows, or -1. */
  get(id: string, rows = Number.POSITIVE_INFINITY): number {
    const row = this.#table[this.#slotOf(id)]!;
    return row < rows ? row : -1;
  }

  /**
   * Adds row `i` (the next row of the entry table), which must hold an id not yet indexed: an
   * earlier snapshot sharing the index must keep finding its rows, never a later duplicate.
   */
  add(i: number): void {
    if ((this.#size + 1) * 2 > this.#table.length) this.#rehash();
    this.#put(i);
  }

  #put(i: number): void {
    const slot = this.#slotOf(this.#ids[i]!);
    if (this.#table[slot] === -1) this.#size++;
    this.#table[slot] = i;
  }

  /** Twice the slots, every row placed again: amortized constant per row added. */
  #rehash(): void {
    const old = this.#table;
    this.#table = new Int32Array(old.length * 2).fill(-1);
    this.#mask = this.#table.length - 1;
    for (const row of old) {
      if (row < 0) continue;
      let slot = hashOf(this.#ids[row]!) & this.#mask;
      while (this.#table[slot] !== -1) slot = (slot + 1) & this.#mask;
      this.#table[slot] = row;
    }
  }

  /** The slot holding `id`, or the empty slot where it would go (linear probing). */
  #slotOf(id: string): number {
    let slot = hashOf(id) & this.#mask;
    for (;;) {
      const index = this.#table[slot]!;
      if (index === -1 || this.#ids[index] === id) return slot;
      slot = (slot + 1) & this.#mask;
    }
  }
}
