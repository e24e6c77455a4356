/**
 * The order the suite's files start in: longest first, so that the two workers finish together
 * rather than one running the longest file alone at the end. The durations are the recorded ones in
 * test/durations.json (seconds per file, from a whole run on two cores; `npm run test:durations`
 * rewrites it from a JSON report); a file not in it falls back on vitest's own cache of the last run
 * on this machine, then on its size, and starts before the recorded ones (it is new, and may be long).
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const recorded = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as Record<string, number>;

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // vitest's own order for the files with no record: its last run's durations, else size.
    const unrecorded = await super.sort(files.filter((spec) => this.seconds(spec) === undefined));
    const known = files
      .filter((spec) => this.seconds(spec) !== undefined)
      .sort((a, b) => this.seconds(b)! - this.seconds(a)! || a.moduleId.localeCompare(b.moduleId));
    return [...unrecorded, ...known];
  }

  private seconds(spec: TestSpecification): number | undefined {
    return recorded[relative(spec.project.config.root, spec.moduleId).split('\\').join('/')];
  }
}
