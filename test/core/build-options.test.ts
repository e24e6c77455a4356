/** Build options are resolved once, by the library, into one frozen object the CLI shares. */
import { isAbsolute, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILD_DEFAULTS, resolveBuildOptions } from '../../src/build-options.js';
import { buildOptionsFromFlags } from '../../src/cli/options.js';
import { renderKeyOf } from '../../src/core/render-key.js';
import { SnapshotError } from '../../src/core/errors.js';

const io = (env: NodeJS.ProcessEnv = {}) => ({ env }) as Parameters<typeof buildOptionsFromFlags>[1];

describe('resolveBuildOptions', () => {
  it('applies the library defaults, makes the out dir absolute and derives the render key', () => {
    const resolved = resolveBuildOptions({ baseUrl: 'https://p.example.com/api/' });
    expect(Object.isFrozen(resolved)).toBe(true);
    expect(resolved.db).toBe(BUILD_DEFAULTS.db);
    expect(isAbsolute(resolved.outDir)).toBe(true);
    expect(resolved.outDir).toBe(resolve(BUILD_DEFAULTS.out));
    expect(resolved.baseUrl).toBe('https://p.example.com/api');
    expect(resolved.renderKey).toBe(renderKeyOf('https://p.example.com/api'));
    expect(resolved.threads).toBe(BUILD_DEFAULTS.threads);
    expect(resolved.lockWaitMs).toBe(BUILD_DEFAULTS.lockWaitMs);
  });

  it('returns a resolved object as it is, and refuses a bad base URL naming where it came from', () => {
    const resolved = resolveBuildOptions({ out: 'x' });
    expect(resolveBuildOptions(resolved)).toBe(resolved);
    expect(() => resolveBuildOptions({ baseUrl: 'ftp://x' }, 'BASE_URL')).toThrow(/^BASE_URL must use http or https/);
    expect(() => resolveBuildOptions({ baseUrl: 'nope' })).toThrow(SnapshotError);
  });

  it('the CLI resolves flags and environment through the same step', () => {
    const fromCli = buildOptionsFromFlags({ out: 'site', threads: '1' }, io({ BASE_URL: 'https://b.example.com/' }));
    expect(Object.isFrozen(fromCli)).toBe(true);
    expect(resolveBuildOptions(fromCli)).toBe(fromCli);
    expect(fromCli).toMatchObject({ outDir: resolve('site'), baseUrl: 'https://b.example.com', threads: 1, db: BUILD_DEFAULTS.db });
    expect(() => buildOptionsFromFlags({}, io({ BASE_URL: 'ftp://x' }))).toThrow(/^BASE_URL must use/);
  });
});
