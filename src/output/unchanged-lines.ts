/**
 * The manifest's member lines that a build leaves as they were, copied in runs from the last manifest
 * file instead of encoded again: in a watch cycle at a million profiles nearly every line is
 * unchanged, and encoding each one cost more than the rest of writing the manifest. Only for a
 * manifest this process wrote (it knows where the member lines start) whose file is still that one.
 */
import type { BufferedFileWriter } from './file-writer.js';
import { PositionedReader } from './positioned-reader.js';

/** The last manifest's member lines: its file, where they start, and their names and entries in list order. */
export interface LastMemberLines {
  file: string;
  start: number;
  names: readonly string[];
  entries: readonly string[];
}

/** A member line's bytes, `u<TAB>name<TAB>entry<LF>`: one byte a character (manifest.ts writes latin1). */
const lineLength = (name: string, entry: string) => name.length + entry.length + 4;

/** Writes member lines found unchanged in the last manifest by copying them, a run at a time. */
export class UnchangedLineCopier {
  /** The last list's member to compare next, and where its line starts in the last file. */
  private next = 0;
  private at: number;
  /** The run of unchanged lines not written yet: [runStart, runEnd) of the last file. */
  private runStart: number;
  private runEnd: number;
  private readonly reader: PositionedReader;

  constructor(
    private readonly last: LastMemberLines,
    private readonly out: BufferedFileWriter,
  ) {
    this.at = this.runStart = this.runEnd = last.start;
    this.reader = new PositionedReader(last.file, false);
  }

  /**
   * Whether member `name`'s line, with `entry`, is the last manifest's (names ascend in both lists):
   * then it joins the run to copy. Otherwise the run so far is written, and the caller writes the line.
   */
  take(name: string, entry: string): boolean {
    const { names, entries } = this.last;
    // Most members are the next one of the last list, most often the very same string: asked first,
    // so that comparing names by order is left to the few that are not.
    if (names[this.next] !== name) this.skipTo(name);
    if (names[this.next] !== name || entries[this.next] !== entry) {
      this.flush();
      return false;
    }
    if (this.at !== this.runEnd) {
      this.flush();
      this.runStart = this.at;
    }
    this.at += lineLength(name, entry);
    this.runEnd = this.at;
    this.next++;
    return true;
  }

  /** Moves past the last list's members whose names come before `name`. */
  private skipTo(name: string): void {
    const { names, entries } = this.last;
    while (this.next < names.length && names[this.next]! < name) {
      this.at += lineLength(names[this.next]!, entries[this.next]!);
      this.next++;
    }
  }

  /** Writes the run taken so far, and lets go of the last file. */
  close(): void {
    try {
      this.flush();
    } finally {
      this.reader.close();
    }
  }

  private flush(): void {
    if (this.runEnd > this.runStart) this.reader.copy(this.runStart, this.runEnd - this.runStart, this.out);
    this.runStart = this.runEnd;
  }
}

/**
 * The member lines of a manifest this process wrote, to copy from: undefined when it was read from
 * disk instead (where its lines start is not known) or lacks an entry for some member.
 */
export function lastMemberLines(
  file: string,
  start: number | undefined,
  list: { names: readonly string[]; entries?: readonly (string | undefined)[] | undefined } | undefined,
): LastMemberLines | undefined {
  const entries = list?.entries;
  if (start === undefined || entries === undefined || entries.length !== list!.names.length) return undefined;
  for (let i = 0; i < entries.length; i++) if (entries[i] === undefined) return undefined;
  return { file, start, names: list!.names, entries: entries as readonly string[] };
}
