/**
 * Numbers given on the command line or in the environment: one parser, so every option refuses a
 * bad value the same way (a usage error, exit 2, naming the option and what it takes).
 */
import { usageError } from '../core/errors.js';

export interface NumberSpec {
  /** What the option takes, in the message: "<option> must be <expected>, not <value>". */
  expected: string;
  /** Accept a decimal fraction (e.g. seconds). */
  fraction?: boolean;
  /** Refuse 0. */
  positive?: boolean;
  /** The largest value (and so the most digits) accepted. */
  max?: number;
}

export function parseNumber(text: string, option: string, spec: NumberSpec): number {
  const shape = spec.fraction ? /^\d+(\.\d+)?$/ : /^\d+$/;
  const value = Number(text);
  const tooLarge = spec.max !== undefined && (value > spec.max || text.length > String(spec.max).length);
  if (!shape.test(text) || (spec.positive && value <= 0) || tooLarge) {
    throw usageError(`${option} must be ${spec.expected}, not ${JSON.stringify(text)}`);
  }
  return value;
}

/** A whole number, 0 included (counts, milliseconds, a seed). */
export const wholeNumber = (text: string, option: string): number => parseNumber(text, option, { expected: 'a whole number' });

/** Seconds as milliseconds: a decimal number, positive unless `zeroAllowed`. */
export function seconds(text: string, option: string, zeroAllowed: boolean): number {
  const expected = `a ${zeroAllowed ? 'non-negative' : 'positive'} number of seconds`;
  return Math.round(parseNumber(text, option, { expected, fraction: true, positive: !zeroAllowed }) * 1000);
}
