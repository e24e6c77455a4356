/**
 * `cloudflare config` and `aws config` through the real, compiled CLI: the committed Worker,
 * wrangler.toml and aws/ files are exactly what the route table renders (`--check`, as CI runs it),
 * a hand edit is caught (exit 5), plain `config` writes them back, and options render a deployment's
 * own wrangler.toml. The Worker has no import at all: one file, no build step.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import TOML from '@iarna/toml';
import { describe, expect, it } from 'vitest';
import { FUNCTION_FILE, HEADERS_POLICY_FILE, TEMPLATE_FILE } from '../../src/hosting/hosts/aws-config.js';
import { WORKER_MODULE, WRANGLER_TOML } from '../../src/hosting/hosts/cloudflare-config.js';
import { runCli } from '../helpers/process.js';
import { REPO } from './fixture.js';

const cli = (args: string[]) => runCli(args);

// The files are compared through the CLI only: the renderers emit functions by their compiled
// source, which the test runner's own module transform would change.
const HOSTS = [
  { command: 'cloudflare', files: [WORKER_MODULE, WRANGLER_TOML], edited: WORKER_MODULE },
  { command: 'aws', files: [FUNCTION_FILE, HEADERS_POLICY_FILE, TEMPLATE_FILE], edited: FUNCTION_FILE },
];

describe.each(HOSTS)('$command config', ({ command, files, edited }) => {
  it('the committed files are exactly what the table renders (--check, as CI runs it)', () => {
    const ok = cli([command, 'config', '--check']);
    expect(ok.stderr).toContain('up to date');
    expect(ok.code).toBe(0);
  });

  it('--check fails (exit 5) on a hand-edited copy and names the file; plain config writes it back', () => {
    const root = mkdtempSync(join(tmpdir(), `profile-snapshot-${command}-`));
    try {
      for (const path of files) cpSync(join(REPO, path), join(root, path), { recursive: true });
      writeFileSync(join(root, edited), `${readFileSync(join(root, edited), 'utf8')}// edited by hand\n`);
      const stale = cli([command, 'config', '--check', '--root', root]);
      expect(stale.code).toBe(5);
      expect(stale.stderr).toContain(edited);
      expect(stale.stderr).toContain(`profile-snapshot ${command} config`);
      expect(cli([command, 'config', '--root', root]).code).toBe(0);
      expect(readFileSync(join(root, edited), 'utf8')).toBe(readFileSync(join(REPO, edited), 'utf8'));
      expect(cli([command, 'config', '--check', '--root', root]).code).toBe(0);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('the Cloudflare files', () => {
  it('the Worker is one dependency-free module', () => {
    const worker = readFileSync(join(REPO, WORKER_MODULE), 'utf8');
    expect(worker).not.toMatch(/^\s*import\b/m);
    expect(worker).not.toMatch(/\brequire\(/);
    expect(worker).toMatch(/^export default \{$/m);
  });

  it("wrangler.toml binds the bucket and routes only the API prefixes; options render a deployment's own", () => {
    const root = mkdtempSync(join(tmpdir(), 'profile-snapshot-wrangler-'));
    try {
      const run = cli([
        'cloudflare',
        'config',
        '--root',
        root,
        '--host',
        'api.creators.test',
        '--zone',
        'creators.test',
        '--bucket',
        'snapshots',
        '--prefix',
        'live/v1',
      ]);
      expect(run.code).toBe(0);
      const toml = TOML.parse(readFileSync(join(root, WRANGLER_TOML), 'utf8')) as any;
      expect(toml.main).toBe('worker.js');
      expect(toml.workers_dev).toBe(false);
      expect(toml.r2_buckets).toEqual([{ binding: 'PROFILES', bucket_name: 'snapshots' }]);
      expect(toml.vars).toEqual({ PREFIX: 'live/v1', CACHE: 'on', OUTSIDE: '404' });
      expect(toml.routes.map((r: { pattern: string }) => r.pattern)).toEqual([
        'api.creators.test/api/v1',
        'api.creators.test/api/v1/*',
        'api.creators.test/service-api/v1',
        'api.creators.test/service-api/v1/*',
      ]);
      expect(toml.routes.every((r: { zone_name: string }) => r.zone_name === 'creators.test')).toBe(true);
      expect(
        cli([
          'cloudflare',
          'config',
          '--check',
          '--root',
          root,
          '--host',
          'api.creators.test',
          '--zone',
          'creators.test',
          '--bucket',
          'snapshots',
          '--prefix',
          'live/v1',
        ]).code,
      ).toBe(0);
      expect(cli(['cloudflare', 'config', '--check', '--root', root]).code).toBe(5);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
