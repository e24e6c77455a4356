/**
 * The documentation stands alone: every relative link of the repository's Markdown (README.md,
 * docs/, BENCHMARKS.md, any other .md git knows of) names a file or folder of the repository, never
 * one outside it, and every `#anchor` a heading of the file it names, by GitHub's slug rules.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/paths.js';
import { checkLinks, headingAnchors, markdownLinks, slugOf, type RepoView } from './markdown-links.js';

/** Files git tracks, or would (untracked but not ignored): what a clone of the repository holds. */
const repoFiles = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' })
  .split('\0')
  .filter((path) => path !== '' && existsSync(join(REPO, path)));
const fileSet = new Set(repoFiles);
const folderSet = new Set(
  repoFiles.flatMap((path) =>
    path
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
  ),
);

const repo: RepoView = {
  isFile: (path) => fileSet.has(path),
  isFolder: (path) => path === '.' || folderSet.has(path),
  read: (path) => readFileSync(join(REPO, path), 'utf8'),
};

/** Markdown to check: all of it but dependencies' and generated change logs. */
const markdown = repoFiles.filter(
  (path) => /\.md$/i.test(path) && !/(^|\/)node_modules\//.test(path) && !/(^|\/)CHANGELOG[^/]*$/i.test(path),
);

/** An in-memory repository for the checker's own tests. */
function memoryRepo(files: Record<string, string>): RepoView {
  return {
    isFile: (path) => path in files,
    isFolder: (path) => Object.keys(files).some((file) => file.startsWith(`${path}/`)),
    read: (path) => files[path]!,
  };
}

describe('the link checker', () => {
  it("gives headings GitHub's anchors", () => {
    expect(slugOf('`--full` repairs the tree')).toBe('--full-repairs-the-tree');
    expect(slugOf('Cloudflare R2 + a Worker')).toBe('cloudflare-r2--a-worker');
    expect(slugOf('AWS (S3 + CloudFront)')).toBe('aws-s3--cloudfront');
    expect(slugOf('Refusals: nothing in the bucket changes')).toBe('refusals-nothing-in-the-bucket-changes');
    expect(slugOf('snake_case and [a link](x.md) & émoji 🚀')).toBe('snake_case-and-a-link--émoji-');
    const anchors = headingAnchors('# Top\n\n## Same\n\ntext\n\n## Same\n\n```\n# not a heading\n```\n\n## Same #\n\nSetext\n---\n');
    expect([...anchors]).toEqual(['top', 'same', 'same-1', 'same-2', 'setext']);
  });

  it('finds links outside code only, with their lines', () => {
    const source = [
      'See [one](a.md) and ![pic](img/p.png "title").', // 1
      '', // 2
      '```sh', // 3
      'echo [not](a-link.md)', // 4
      '```', // 5
      'In code: `[not](either.md)`, ``a ` [nor](this.md)``; but [a\nwrapped link](b.md#part).', // 6-7
      '| table | [cell](<c d.md>) |', // 8
    ].join('\n');
    expect(markdownLinks(source)).toEqual([
      { line: 1, target: 'a.md' },
      { line: 1, target: 'img/p.png' },
      { line: 6, target: 'b.md#part' },
      { line: 8, target: 'c d.md' },
    ]);
  });

  it('reports a missing file, a missing anchor and a link out of the repository; passes the rest', () => {
    const repo = memoryRepo({
      'README.md': '',
      'docs/api.md': '# The API\n\n## Errors\n\n## Errors\n',
      'docs/sub/x.yml': '',
      'src/a.ts': '',
    });
    const readme = [
      '# Read me',
      '[api](docs/api.md) [errors](docs/api.md#errors) [second errors](docs/api.md#errors-1) [top](#read-me)',
      '[folder](docs/sub/) [code](src/a.ts#L3-L9) [web](https://example.com/x#y) [mail](mailto:a@example.com)',
      '[gone](docs/store.md) [bad anchor](docs/api.md#caching) [bad own anchor](#nowhere)',
      '[shared](../shared/spec/profile-store.md) [abs](/docs/api.md#the-api) [ftp](ftp://example.com)',
      '`[in code](nowhere.md)`',
    ].join('\n');
    expect(checkLinks('README.md', readme, repo)).toEqual([
      { file: 'README.md', line: 4, target: 'docs/store.md', problem: 'no file or folder docs/store.md in the repository' },
      { file: 'README.md', line: 4, target: 'docs/api.md#caching', problem: 'no heading of docs/api.md has the anchor #caching' },
      { file: 'README.md', line: 4, target: '#nowhere', problem: 'no heading of README.md has the anchor #nowhere' },
      { file: 'README.md', line: 5, target: '../shared/spec/profile-store.md', problem: 'points outside the repository' },
      { file: 'README.md', line: 5, target: 'ftp://example.com', problem: 'scheme ftp: is not allowed (only http, https, mailto)' },
    ]);
    expect(checkLinks('docs/api.md', '[up](../README.md#read-me) [out](../../x.md)', { ...repo, read: () => '# Read me' })).toEqual([
      { file: 'docs/api.md', line: 1, target: '../../x.md', problem: 'points outside the repository' },
    ]);
  });
});

describe('the repository’s Markdown', () => {
  it('includes the README and every page of docs/', () => {
    expect(markdown).toContain('README.md');
    expect(markdown).toContain('docs/api.md');
    expect(markdown).toContain('docs/store.md');
  });

  it.each(markdown)('%s: every relative link resolves inside the repository', (file) => {
    expect(checkLinks(file, repo.read(file), repo)).toEqual([]);
  });
});
