/**
 * The rules by which a publish trusts the record it finds in the bucket (src/publish/record/record.ts), on
 * the objects' bytes as the tool writes them: what is trusted, what is re-checked, and when nothing
 * is (the prefix is then listed).
 */
import { describe, expect, it } from 'vitest';
import { judge } from '../../src/publish/record/record.js';
import { NO_BASE, serializeIntent, serializeState, type RemoteIntent } from '../../src/publish/record/format.js';
import { UNKNOWN } from '../../src/publish/plan/live-set.js';
import type { StoredObject } from '../../src/publish/bucket/objects.js';
import { tableOf } from '../../src/publish/plan/profile-table.js';

const stored = (bytes: Buffer, etag: string): StoredObject => ({ bytes, etag, modifiedMs: 0 });
const state = (id: string) =>
  stored(
    serializeState(
      id,
      [
        ['alice', 'h1'],
        ['bob', 'h2'],
      ],
      [['service-api/v1/creators', 'h3']],
    ),
    `"state-${id}"`,
  );
const intent = (fields: Partial<RemoteIntent> & Pick<RemoteIntent, 'id' | 'base'>) =>
  stored(serializeIntent({ profiles: new Set(), files: new Set(), strays: new Set(), ...fields }), `"intent-${fields.id}"`);

describe('the record a publish finds', () => {
  it('is trusted as it is when its state resolved the last intent, or there is no intent', () => {
    for (const record of [judge(state('p1'), intent({ id: 'p1', base: 'p0' })), judge(state('p1'), undefined)]) {
      expect(record.settled).toBe(true);
      expect(record.base).toBe('p1');
      expect(tableOf(record.live!.profiles).get('bob')).toBe('h2');
    }
  });

  it('marks what an unresolved intent over this very state names as unknown, and trusts the rest', () => {
    const record = judge(state('p1'), intent({ id: 'p2', base: 'p1', profiles: new Set(['bob', 'carol']), strays: new Set(['x']) }));
    expect(record.settled).toBe(false);
    expect(record.base).toBe('p1');
    expect(tableOf(record.live!.profiles).get('alice')).toBe('h1');
    expect(tableOf(record.live!.profiles).get('bob')).toBe(UNKNOWN);
    expect(tableOf(record.live!.profiles).get('carol')).toBe(UNKNOWN);
    expect([...record.live!.strays]).toEqual(['x']);
  });

  it('trusts nothing when the intent was planned over another state, or there is no readable state', () => {
    const cases = [
      judge(state('p1'), intent({ id: 'p3', base: 'p2' })), // a state written outside the lease
      judge(state('p1'), intent({ id: 'p3', base: NO_BASE })), // planned over a listing
      judge(undefined, intent({ id: 'p3', base: 'p2' })),
      judge(stored(Buffer.from('not gzip'), '"x"'), undefined),
      judge(state('p1'), stored(Buffer.from('not gzip'), '"y"')),
    ];
    for (const record of cases) {
      expect(record.live).toBeUndefined();
      expect(record.settled).toBe(false);
      expect(record.base).toBe(NO_BASE);
    }
  });

  it('keeps the versions read, which the next writes must replace', () => {
    const record = judge(state('p1'), intent({ id: 'p1', base: 'p0' }));
    expect(record.stateEtag).toBe('"state-p1"');
    expect(record.intentEtag).toBe('"intent-p1"');
    expect(judge(undefined, undefined)).toMatchObject({ stateEtag: undefined, intentEtag: undefined });
  });
});
