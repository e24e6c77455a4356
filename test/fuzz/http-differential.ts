/**
 * The differential run behind ./http.test.ts: each case on two origins at once (one with the quick
 * path, one without), every difference logged by kind; then each kind's smallest case is shrunk
 * (requests dropped while the same difference stays) and replayed, to show it is no accident of
 * timing, and reported with the commands that replay it.
 *
 * Node's own path is not deterministic everywhere: to a client that reads late (megabytes of
 * answers waiting, the server stopping and resuming its reads), a pipeline that closes or is
 * refused behind them is answered as the reads happen to fall, more or less of it from one run to
 * the next (the control run, FUZZ_HTTP_CONTROL=1, shows it). So a case that differs is run again on
 * two origins without the quick path; if those differ too, the case says nothing about the quick
 * path: it is set aside (named in the run's output, not a failure).
 */
import { compare, describeFailure, FailureLog, type Difference, type Failure } from './http-differences.js';
import { caseToJson, streamBytes, withoutRequests, type HttpCase } from './http-streams.js';
import { converse, type ServerUnderTest } from './http-wire.js';

export interface DifferentialOptions {
  /** FUZZ_SEED, for the replay commands. */
  seed: number;
  /** A connection that sends nothing for this long after its answers is open. */
  quietMs: number;
  /** Cases run at once (each on two connections): they spend most of their time waiting. */
  inFlight: number;
  /** Times each failure kind's example is run again. */
  replays: number;
  /** Failure kinds reported at most (all are counted). */
  reported: number;
  /** Time spent shrinking each reported kind's example, at most. */
  shrinkMs: number;
  /** Times a case that differs is run on Node's path against itself, to tell Node's own nondeterminism apart. */
  controls: number;
}

/** A replay command longer than this is not printed (the case's id replays it). */
const COMMAND_PRINTED = 4000;

export class Differential {
  constructor(
    private readonly servers: {
      quick: ServerUnderTest;
      node: ServerUnderTest;
      /** A second origin without the quick path, for the control runs. */
      control: ServerUnderTest;
    },
    private readonly options: DifferentialOptions,
  ) {}

  /** Runs one case on the quick path's origin and Node's at once; the difference, if any. */
  differ(httpCase: HttpCase): Promise<Difference | undefined> {
    return this.differBetween(this.servers.quick, this.servers.node, httpCase);
  }

  private async differBetween(a: ServerUnderTest, b: ServerUnderTest, httpCase: HttpCase): Promise<Difference | undefined> {
    const bytes = streamBytes(httpCase.requests);
    const { quietMs } = this.options;
    const [quick, node] = await Promise.all([converse(a, bytes, httpCase.plan, quietMs), converse(b, bytes, httpCase.plan, quietMs)]);
    return compare(httpCase, quick, node);
  }

  /** Whether Node's path answers the case the same way every time (as far as `controls` runs against itself tell). */
  private async nodeIsSteady(httpCase: HttpCase): Promise<boolean> {
    for (let run = 0; run < this.options.controls; run++) {
      if (await this.differBetween(this.servers.node, this.servers.control, httpCase)) return false;
    }
    return true;
  }

  /** Runs every case; a report of each kind of difference found, or '' if none was. */
  async run(cases: readonly HttpCase[]): Promise<string> {
    const log = new FailureLog();
    const unsteady: HttpCase[] = [];
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const httpCase = cases[next++]!;
        const difference = await this.differ(httpCase);
        if (difference === undefined) continue;
        if (await this.nodeIsSteady(httpCase)) log.add({ httpCase, difference });
        else unsteady.push(httpCase);
      }
    };
    await Promise.all(Array.from({ length: this.options.inFlight }, worker));
    const note = unsteady.length > 0 ? setAside(unsteady) : '';
    if (log.size > 0) return `${await this.report(log, cases.length)}${note && `\n\n${note}`}`;
    if (note) console.log(note);
    return '';
  }

  private async report(log: FailureLog, cases: number): Promise<string> {
    const { reported, seed } = this.options;
    const described: string[] = [];
    for (const [i, { count, example }] of log.examples(reported).entries()) {
      const small = await this.shrink(example);
      const reproduced = await this.replay(small.httpCase, small.difference.signature);
      const dropped = example.httpCase.requests.length - small.httpCase.requests.length;
      const summary = `${count} case(s); the smallest, ${example.httpCase.id}${dropped > 0 ? `, shrunk by ${dropped} request(s)` : ''}, ${reproduced}`;
      described.push(
        `${i + 1}. ${describeFailure(small, summary, this.commands(example.httpCase, dropped > 0 ? small.httpCase : undefined))}`,
      );
    }
    const more = log.size > reported ? ` (the ${reported} most frequent shown)` : '';
    return `${log.size} kind(s) of difference in ${cases} case(s)${more}, seed ${seed}:\n\n${described.join('\n\n')}`;
  }

  /** How to run a case again: by its id (drawn again from the seed), and the shrunk case as given. */
  private commands(original: HttpCase, shrunk: HttpCase | undefined): string[] {
    return shrunk ? [this.command(original), this.command(shrunk, true)] : [this.command(original)];
  }

  private command(httpCase: HttpCase, asGiven = httpCase.id === 'given'): string {
    const vitest = 'npx vitest run test/fuzz/http.test.ts';
    if (asGiven) {
      const command = `FUZZ_HTTP_CASE=${shellQuoted(caseToJson(httpCase))} ${vitest}`;
      return command.length <= COMMAND_PRINTED ? command : `(the case as given is ${command.length} characters long: replay it by its id)`;
    }
    if (httpCase.id.startsWith('regression: ')) return `FUZZ_HTTP_CASE=${shellQuoted(httpCase.id.slice('regression: '.length))} ${vitest}`;
    return `FUZZ_SEED=${this.options.seed} FUZZ_HTTP_CASE=${httpCase.id} ${vitest}`;
  }

  /**
   * Drops runs of requests (halves first, then smaller runs, down to single requests) as long as the
   * case still shows the same difference, within the time allowed: a smaller case to read.
   */
  private async shrink(failure: Failure): Promise<Failure> {
    const { signature } = failure.difference;
    const deadline = performance.now() + this.options.shrinkMs;
    let best = failure;
    for (const run of runLengths(failure.httpCase.requests.length)) {
      for (let from = 0; from < best.httpCase.requests.length && performance.now() < deadline;) {
        const candidate = withoutRequests(best.httpCase, from, from + run);
        const difference = candidate.requests.length > 0 ? await this.differ(candidate) : undefined;
        if (difference?.signature === signature) best = { httpCase: candidate, difference };
        else from += run;
      }
    }
    return best;
  }

  /** Runs a failing case again: how often the same difference comes back, and what came instead. */
  private async replay(httpCase: HttpCase, signature: string): Promise<string> {
    const { replays } = this.options;
    const outcomes = new Map<string, number>();
    for (let r = 0; r < replays; r++) {
      const outcome = (await this.differ(httpCase))?.signature ?? 'no difference';
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    const again = outcomes.get(signature) ?? 0;
    outcomes.delete(signature);
    const others = [...outcomes].map(([outcome, n]) => `${n}× ${outcome}`);
    return `reproduced ${again} of ${replays} times on replay${others.length > 0 ? ` (otherwise: ${others.join('; ')})` : ''}`;
  }
}

const shellQuoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/** What the run set aside, for its log: how many cases, and which. */
function setAside(cases: readonly HttpCase[]): string {
  const ids = cases.map((c) => c.id);
  const shown = ids.length > 20 ? `${ids.slice(0, 20).join(', ')}, …` : ids.join(', ');
  return `${cases.length} case(s) set aside: they differed, but Node's path differs from itself on them too (${shown})`;
}

/** Half of `count`, then half of that, down to 1: the lengths of the runs of requests a shrink tries to drop. */
function runLengths(count: number): number[] {
  const lengths: number[] = [];
  for (let length = count; length > 1;) lengths.push((length = Math.ceil(length / 2)));
  return lengths;
}
