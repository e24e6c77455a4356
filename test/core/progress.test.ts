/** The progress line: only on a terminal, only once work takes a while, and cleared at the end. */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { ProgressLine } from '../../src/cli/report.js';
import { buildTo } from '../helpers/build.js';
import { eachTestWorkspace, TestStore, userName, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
eachTestWorkspace((workspace) => ({ dir } = workspace));

describe('progress of a pass', () => {
  it('is reported every 10,000 rows read, and once at the end', () => {
    const db = join(dir.path, 'profiles.db');
    new TestStore(db).users(20_500, (id) => ({ user: { username: userName(id) } })).close();
    const reported: number[] = [];
    buildTo(db, join(dir.path, 'out'), { onProgress: (rows) => reported.push(rows), threads: 1 });
    expect(reported).toEqual([10_000, 20_000, 20_500]);
  });
});

class Capture {
  text = '';
  constructor(readonly isTTY: boolean) {}
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

describe('ProgressLine', () => {
  it('stays silent for quick work and on anything but a terminal', async () => {
    const tty = new Capture(true);
    const pipe = new Capture(false);
    const quick = new ProgressLine(tty as unknown as NodeJS.WritableStream);
    quick.update('read 10,000 rows');
    await new Promise((r) => setTimeout(r, 1100));
    const piped = new ProgressLine(pipe as unknown as NodeJS.WritableStream);
    await new Promise((r) => setTimeout(r, 1100));
    piped.update('read 20,000 rows');
    piped.clear();
    expect(tty.text).toBe('');
    expect(pipe.text).toBe('');
  });

  it('draws on a terminal after a second of work, then clears its line', async () => {
    const tty = new Capture(true);
    const progress = new ProgressLine(tty as unknown as NodeJS.WritableStream);
    await new Promise((r) => setTimeout(r, 1100));
    progress.update('read 30,000 rows');
    expect(tty.text).toBe('\r\x1b[2Kread 30,000 rows…');
    progress.clear();
    expect(tty.text.endsWith('\r\x1b[2K')).toBe(true);
  });
});
