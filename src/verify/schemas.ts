/**
 * ajv (JSON Schema 2020-12) validators over the component schemas of the contract document: the one
 * JSON Schema source. `verify` and the test suites both validate with these.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { contractDocument } from '../core/contract.js';

export type SchemaName =
  | 'Meta'
  | 'Badges'
  | 'AvatarDecoration'
  | 'Social'
  | 'BanInfo'
  | 'User'
  | 'ActiveUser'
  | 'ProfileResponse'
  | 'CreatorsResponse'
  | 'Error'
  | 'ErrorResponse';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

function instance(): Ajv2020 {
  if (ajv === undefined) {
    // strict: false because the document holds OpenAPI keywords (example, discriminator...) ajv does not know.
    ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(ajv);
    ajv.addSchema(contractDocument(), 'openapi');
  }
  return ajv;
}

/** The validator of one component schema (`#/components/schemas/<name>`), compiled once. */
export function validator(name: SchemaName | string): ValidateFunction {
  let validate = compiled.get(name);
  if (validate === undefined) {
    validate = instance().getSchema(`openapi#/components/schemas/${name}`);
    if (!validate) throw new Error(`bug: the contract has no component schema ${name}`);
    compiled.set(name, validate);
  }
  return validate;
}

/** ajv errors as one readable line: `/data/status must be equal to one of the allowed values; ...`. */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined, prefix = ''): string {
  if (!errors || errors.length === 0) return 'does not match its schema';
  const seen = new Set<string>();
  for (const e of errors) {
    // if/then/else and anyOf add a summary error after the precise ones: keep only the precise ones.
    if (e.keyword === 'if' || e.keyword === 'anyOf' || (e.keyword === 'oneOf' && errors.length > 1)) continue;
    const where = `${prefix}${e.instancePath}` || '(document)';
    const extra =
      e.keyword === 'additionalProperties'
        ? ` (${(e.params as { additionalProperty: string }).additionalProperty})`
        : e.keyword === 'enum'
          ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')})`
          : e.keyword === 'const'
            ? ` (${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)})`
            : '';
    seen.add(`${where} ${e.message ?? 'is invalid'}${extra}`);
  }
  return seen.size === 0 ? 'does not match its schema' : [...seen].join('; ');
}
