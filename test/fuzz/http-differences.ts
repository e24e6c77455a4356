/**
 * What two conversations of the same case differ in (the quick path's and Node's own, see
 * ./http.test.ts), and the failures of a run: grouped by a signature of what differs, each kind
 * reported once with its smallest case, a replay command and the first differing bytes.
 */
import type { Conversation } from './http-wire.js';
import { describeForms, endsEarly, streamBytes, type HttpCase } from './http-streams.js';

/** How far a Date header may be from the comparison's own clock (a late reader's case takes a while). */
const DATE_SLACK_MS = 30_000;

const DATE_LINE = Buffer.from('\r\nDate: ', 'latin1');
const MASK = '#'.charCodeAt(0);

/**
 * A copy of the bytes with each Date header's value masked: the one header the two servers may
 * send apart (a second may turn between them). Each value must be Node's form of the time now; one
 * that is not stays as it is (and is reported). A Date line cut off at the end (a connection reset
 * mid-answer) is masked as far as it goes. Buffers, not strings: a late reader gets megabytes.
 */
export function maskDates(received: Buffer, now = Date.now()): { masked: Buffer; badDates: string[] } {
  const masked = Buffer.from(received);
  const badDates: string[] = [];
  for (let at = masked.indexOf(DATE_LINE); at !== -1; at = masked.indexOf(DATE_LINE, at + DATE_LINE.length)) {
    const start = at + DATE_LINE.length;
    const end = masked.indexOf('\r\n', start, 'latin1');
    if (end === -1) {
      masked.fill(MASK, start);
      break;
    }
    const value = masked.toString('latin1', start, end);
    const ms = Date.parse(value);
    if (new Date(ms).toUTCString() === value && Math.abs(ms - now) < DATE_SLACK_MS) masked.fill(MASK, start, end);
    else badDates.push(value);
  }
  return { masked, badDates };
}

/**
 * The received bytes to compare. A connection reset by the server loses whatever the server had not
 * sent yet, and how much that is depends on timing, on Node's path too (the control run shows it:
 * a 400 after a pipeline to a client that reads late): when both sides were reset, only the bytes
 * both received are compared, so one side's must be a prefix of the other's.
 *
 * A stream that Node's server ends before its last request (endsEarly) is taken the same way, its
 * 400 aside: where Node's server meets the request it refuses, answers to earlier requests of the
 * same read that are still queued are dropped (reset or closed), and it writes its 400 only if no
 * answer is in flight. Which answers those are depends on how the bytes reached its parser: read
 * from the socket by its own parser, event-loop turns run between the requests of one read and let
 * answers finish; handed over by the quick path, the same read is parsed in one turn. So the
 * answers must agree as far as both go, and the connection must end on both sides.
 */
function comparable(httpCase: HttpCase, quick: Conversation, node: Conversation): [Buffer, Buffer] {
  const early = endsEarly(httpCase.requests) && quick.fate !== 'open' && node.fate !== 'open';
  if (!early && (quick.fate !== 'reset' || node.fate !== 'reset')) return [quick.received, node.received];
  const [q, n] = early ? [withoutRefusal(quick.received), withoutRefusal(node.received)] : [quick.received, node.received];
  const length = Math.min(q.length, n.length);
  return [q.subarray(0, length), n.subarray(0, length)];
}

/** What Node's server writes to a request it refuses, when no answer is in flight. */
const REFUSAL = Buffer.from('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n', 'latin1');

/** The bytes without a refusal at their end. */
function withoutRefusal(bytes: Buffer): Buffer {
  const end = bytes.length - REFUSAL.length;
  return end >= 0 && bytes.subarray(end).equals(REFUSAL) ? bytes.subarray(0, end) : bytes;
}

/** The connection's fate as compared: a stream Node's server ends early may end closed or reset (see comparable). */
function fateOf(httpCase: HttpCase, conversation: Conversation): string {
  return endsEarly(httpCase.requests) && conversation.fate === 'reset' ? 'closed' : conversation.fate;
}

export interface Difference {
  /** What differs, in words that are the same for every case of one failure kind (the signature). */
  signature: string;
  /** The first differing byte of the answers (Date values masked), if they differ. */
  offset: number | undefined;
  quick: { conversation: Conversation; masked: Buffer };
  node: { conversation: Conversation; masked: Buffer };
}

/** Where two buffers first differ (the shorter one's length if it is a prefix of the other), halving with native compares. */
function firstDifference(a: Buffer, b: Buffer): number {
  let [low, high] = [0, Math.min(a.length, b.length)];
  if (a.subarray(0, high).equals(b.subarray(0, high))) return high;
  // The first difference is in [low, high).
  while (high - low > 64) {
    const middle = (low + high) >>> 1;
    if (a.subarray(low, middle).equals(b.subarray(low, middle))) low = middle;
    else high = middle;
  }
  while (a[low] === b[low]) low++;
  return low;
}

/** The status line of the answer that holds `offset` (or starts there), or what is there instead. */
function answerAt(bytes: Buffer, offset: number): string {
  if (offset >= bytes.length) return 'nothing more';
  const start = bytes.toString('latin1', offset, offset + 7) === 'HTTP/1.' ? offset : bytes.lastIndexOf('HTTP/1.', offset, 'latin1');
  if (start === -1) return JSON.stringify(bytes.toString('latin1', offset, offset + 16));
  const end = bytes.indexOf('\r\n', start, 'latin1');
  const line = bytes.toString('latin1', start, end);
  return offset < end ? line : `the middle of ${line}`;
}

/**
 * How the answers differ, in words shared by every case of one kind: one side's answers stop where
 * the other's go on (whatever the status of the next one), or they part ways (then by the statuses,
 * which tell an order apart from a wrong answer).
 */
function bytesShape(quick: Buffer, node: Buffer, offset: number): string {
  if (offset === quick.length) return "the quick path's answers stop short of Node's";
  if (offset === node.length) return "the quick path sends answers beyond Node's";
  return `the quick path sends ${answerAt(quick, offset)} where Node sends ${answerAt(node, offset)}`;
}

/** How the client behaved, as far as it sorts the differences (not how it cut its writes). */
function clientTraits(plan: HttpCase['plan']): string {
  const traits = [plan.readLateMs > 0 ? 'reads late' : 'reads at once'];
  if (plan.halfClose) traits.push('half-closes');
  return traits.join(', ');
}

/** The difference between the two conversations of `httpCase`, or undefined if they agree. */
export function compare(httpCase: HttpCase, quick: Conversation, node: Conversation): Difference | undefined {
  const now = Date.now();
  const [quickBytes, nodeBytes] = comparable(httpCase, quick, node);
  const [q, n] = [maskDates(quickBytes, now), maskDates(nodeBytes, now)];
  const problems: string[] = [];
  let offset: number | undefined;
  if (!q.masked.equals(n.masked)) {
    offset = firstDifference(q.masked, n.masked);
    problems.push(bytesShape(q.masked, n.masked, offset));
  }
  if (fateOf(httpCase, quick) !== fateOf(httpCase, node))
    problems.push(`the quick path's connection ends ${quick.fate}, Node's ${node.fate}`);
  if (q.badDates.length + n.badDates.length > 0) problems.push('a Date header is not the time now in IMF-fixdate');
  if (problems.length === 0) return undefined;
  return {
    signature: `${problems.join('; ')} (client ${clientTraits(httpCase.plan)})`,
    offset,
    quick: { conversation: quick, masked: q.masked },
    node: { conversation: node, masked: n.masked },
  };
}

export interface Failure {
  httpCase: HttpCase;
  difference: Difference;
}

/** A run's failures by signature; each signature's smallest case is its example. */
export class FailureLog {
  private readonly kinds = new Map<string, { count: number; example: Failure }>();

  add(failure: Failure): void {
    const kind = this.kinds.get(failure.difference.signature);
    if (kind === undefined) return void this.kinds.set(failure.difference.signature, { count: 1, example: failure });
    kind.count++;
    if (size(failure) < size(kind.example)) kind.example = failure;
  }

  get size(): number {
    return this.kinds.size;
  }

  /** The examples, most frequent kind first. */
  examples(limit: number): { count: number; example: Failure }[] {
    return [...this.kinds.values()].sort((a, b) => b.count - a.count).slice(0, limit);
  }
}

const size = (failure: Failure) => streamBytes(failure.httpCase.requests).length + failure.httpCase.plan.cuts.length;

/** At most this much of a stream is printed (a replay draws it again whole). */
const STREAM_PRINTED = 1500;
const CONTEXT = 60;

/** One failure kind, for a person to read and replay: its example, how often it was seen and replayed, the commands that replay it. */
export function describeFailure({ httpCase, difference }: Failure, summary: string, commands: string[]): string {
  const stream = streamBytes(httpCase.requests).toString('latin1');
  const shown =
    stream.length > STREAM_PRINTED
      ? `${JSON.stringify(stream.slice(0, STREAM_PRINTED))} … (${stream.length} bytes)`
      : JSON.stringify(stream);
  return [
    difference.signature,
    `  ${summary}`,
    ...commands.map((command) => `  replay: ${command}`),
    `  forms:  ${describeForms(httpCase.requests)}`,
    `  plan:   ${JSON.stringify(httpCase.plan)}`,
    `  stream: ${shown}`,
    `  quick: ${describeConversation(difference.quick.conversation)}`,
    `  node:  ${describeConversation(difference.node.conversation)}`,
    ...describeFirstDifference(difference),
  ].join('\n');
}

function describeConversation(c: Conversation): string {
  const notes = [`${c.received.length} bytes`, c.error ? `${c.fate} (${c.error})` : c.fate];
  if (c.unsent > 0) notes.push(`${c.unsent} bytes unsent (closed before their write)`);
  if (c.stalls > 0) notes.push(`${c.stalls} write(s) sent while the server did not read`);
  if (c.restless) notes.push('called open, but the server never came to rest');
  return notes.join(', ');
}

/** The bytes either side of the first difference, on each side. */
function describeFirstDifference({ offset, quick, node }: Difference): string[] {
  if (offset === undefined) return [];
  const next = `${answerAt(quick.masked, offset)} / ${answerAt(node.masked, offset)}`;
  const around = (bytes: Buffer) =>
    `${JSON.stringify(bytes.toString('latin1', Math.max(0, offset - CONTEXT), offset))} ‖ ${JSON.stringify(bytes.toString('latin1', offset, offset + CONTEXT))}`;
  return [
    `  first difference at byte ${offset} of the answers (Date values masked as #; quick / node: ${next}):`,
    `    quick ${around(quick.masked)}`,
    `    node  ${around(node.masked)}`,
  ];
}
