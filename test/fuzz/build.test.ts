/**
 * Property-based fuzzing of store -> output (issue 7.1). Random stores within the contract's schema,
 * full of adversarial values (see model.ts), are built into a temp folder and checked against an
 * oracle restated from the contract (oracle.ts): every publishable row is published, exactly as the
 * mapping says, schema-valid; every other row is skipped with a warning; no file is written outside
 * --out; no private value is in any file, report or log line; the build never crashes.
 *
 * Fixed seeds and bounded runs here; `npm run fuzz` runs the same properties longer with a fresh seed
 * (FUZZ_RUNS, FUZZ_SEED).
 */
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { build, type BuildReport } from '../../src/build.js';
import { formatSummary, formatWarnings } from '../../src/cli/report.js';
import { SnapshotError } from '../../src/errors.js';
import { runCli } from '../helpers/cli.js';
import { listFiles } from '../helpers/output.js';
import { tempDir } from '../helpers/store.js';
import { storeArbitrary, writeStore, type ModelStore } from './model.js';
import { BASE, expectation } from './oracle.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const CLI_RUNS = Number(process.env.FUZZ_CLI_RUNS ?? 3);
const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const SNAPSHOT_MS = Date.UTC(2026, 0, 1);

const root = tempDir('ps-fuzz-');
afterAll(() => root.cleanup());
let counter = 0;

/** A sandbox folder; --out is three levels down, so an escape by `../` would land inside the sandbox. */
function sandbox() {
  const path = join(root.path, String(counter++));
  const out = join(path, 'a', 'b', 'out');
  mkdirSync(join(path, 'a', 'b'), { recursive: true });
  return { path, out };
}

/** Only the stores and the out dir are in the sandbox. */
function strayFiles(path: string): string[] {
  return listFiles(path).filter((f) => !/^store-\d\.db$/.test(f) && !f.startsWith(join('a', 'b', 'out') + '/'));
}

function buildOnce(db: string, out: string): BuildReport {
  try {
    return build({ db, out, baseUrl: BASE, snapshotMs: SNAPSHOT_MS, reproducible: true });
  } catch (error) {
    // Bad data must never stop a build: no store of the contract's schema is an error, let alone a crash.
    throw new Error(`build threw ${error instanceof SnapshotError ? `a ${error.kind} error` : 'a crash'}: ${String(error)}`);
  }
}

function checkBuilt(db: string, out: string, model: ModelStore, report: BuildReport, nonce: string): void {
  const problems = expectation(db, model).check(out, report, SNAPSHOT_MS, nonce);
  const logs = formatWarnings(report.warnings) + formatSummary(report);
  if (logs.includes(nonce)) problems.push('private value in the log lines');
  if (problems.length > 0) throw new Error(problems.slice(0, 12).join('\n'));
}

describe('fuzz: store -> output', () => {
  it(`publishes exactly what the contract says, never outside --out, never a private value (${RUNS} runs, seed ${SEED})`, () => {
    fc.assert(fc.property(storeArbitrary(), storeArbitrary(), (first, second) => {
      const { path, out } = sandbox();
      const nonce = randomBytes(6).toString('hex');
      // Build one store, then another random store into the same out dir: rewrites and removals too.
      for (const [index, model] of [first, second].entries()) {
        const db = join(path, `store-${index}.db`);
        writeStore(db, model, nonce);
        const report = buildOnce(db, out);
        checkBuilt(db, out, model, report, nonce);
        // The same snapshot again: nothing is rewritten, and the tree is still exactly right.
        const again = buildOnce(db, out);
        if (again.files.written !== 0 || again.files.removed !== 0) throw new Error(`rebuild rewrote ${again.files.written} files, removed ${again.files.removed}`);
        checkBuilt(db, out, model, again, nonce);
      }
      const stray = strayFiles(path);
      if (stray.length > 0) throw new Error(`files outside --out: ${stray.map((f) => relative(path, join(path, f))).join(', ')}`);
    }), { seed: SEED, numRuns: RUNS, endOnFailure: true });
  }, Math.max(120_000, RUNS * 3000));

  it(`the real CLI never exits 1 and prints no private value, with --json and --strict (${CLI_RUNS} runs, seed ${SEED + 1})`, () => {
    fc.assert(fc.property(storeArbitrary(10), (model) => {
      const { path, out } = sandbox();
      const nonce = randomBytes(6).toString('hex');
      const db = join(path, 'store-0.db');
      writeStore(db, model, nonce);
      const env = { SOURCE_DATE_EPOCH: String(SNAPSHOT_MS / 1000) };
      const runs = [
        runCli(['build', '--db', db, '--out', out, '--base-url', BASE, '--strict'], { env }),
        // --json: the report on stdout, the text log lines (warnings, summary) on stderr.
        runCli(['build', '--db', db, '--out', out, '--base-url', BASE, '--json'], { env }),
      ];
      const codes = runs.map((r) => r.code);
      const strictOk = codes[0] === 0 || codes[0] === 4;
      if (!strictOk || codes[1] !== 0) throw new Error(`exit codes ${codes.join(', ')}: ${runs.map((r) => r.stderr.slice(0, 300)).join('\n')}`);
      const report = JSON.parse(runs[1]!.stdout) as BuildReport;
      const problems = expectation(db, model).check(out, report, SNAPSHOT_MS, nonce);
      for (const r of runs) if ((r.stdout + r.stderr).includes(nonce)) problems.push('private value in the CLI output');
      if (problems.length > 0) throw new Error(problems.slice(0, 12).join('\n'));
    }), { seed: SEED + 1, numRuns: CLI_RUNS, endOnFailure: true });
  }, Math.max(120_000, CLI_RUNS * 10_000));

  it('the oracle can fail: a private value planted in the output is found', () => {
    // Guards the property above against a blind oracle.
    const model = fc.sample(storeArbitrary(3), { seed: 1, numRuns: 1 })[0]!;
    model.users = model.users.map((u) => ({ ...u, status: 'active', username: `user${String(u.id).replace('-', 'm')}`, created_at: { value: '2020-01-01 00:00:00', iso: '2020-01-01T00:00:00.000Z' } }));
    const { path, out } = sandbox();
    const db = join(path, 'store-0.db');
    writeStore(db, model, 'planted0nonce');
    const report = buildOnce(db, out);
    expect(() => checkBuilt(db, out, model, report, 'planted0nonce')).not.toThrow();
    expect(() => checkBuilt(db, out, model, { ...report, warnings: [{ id: 1, reason: 'x planted0nonce' }] }, 'planted0nonce')).toThrow(/private value/);
    expect(() => checkBuilt(db, out, { ...model, users: model.users.slice(1) }, report, 'planted0nonce')).toThrow();
  });
});
