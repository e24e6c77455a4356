/**
 * A checker for the relative links of the repository's Markdown, as GitHub renders them: every
 * `[text](target)` (and `![alt](src)`) outside fenced code blocks and inline code must name a file or
 * folder inside the repository, and a `#anchor` must be the slug of a heading of the Markdown file it
 * names (GitHub's rules, github-slugger's). http(s) and mailto links are allowed and never fetched.
 */
import { posix } from 'node:path';

/** The repository as the checker sees it: paths are repository-relative, with `/` separators. */
export interface RepoView {
  isFile(path: string): boolean;
  isFolder(path: string): boolean;
  read(path: string): string;
}

export interface MarkdownLink {
  line: number;
  target: string;
}

export interface LinkProblem {
  file: string;
  line: number;
  target: string;
  problem: string;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT_UNDERLINE = /^ {0,3}(?:=+|-+)[ \t]*$/;
const NOT_PARAGRAPH = /^\s*(?:[-*+>|]|\d+[.)])(?:\s|$)|^\s*\|/;
const LINK =
  /!?\[((?:[^[\]]|\[[^[\]]*\])*)\]\([ \t\n]*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:[ \t\n]+(?:"[^"]*"|'[^']*'|\([^()]*\)))?[ \t\n]*\)/g;
const EXTERNAL = /^(?:https?:|mailto:)/i;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
/** GitHub's own anchors into a file that has no headings: a line or a range of lines. */
const LINE_ANCHOR = /^L\d+(?:C\d+)?(?:-L\d+(?:C\d+)?)?$/;

/**
 * The blocks of prose: runs of lines outside fenced code blocks, split at blank lines (a code span
 * or a link never crosses one), each with its first line's number (1-based).
 */
function proseBlocks(source: string): { line: number; text: string }[] {
  const blocks: { line: number; text: string }[] = [];
  let current: { line: number; lines: string[] } | undefined;
  let fence: { char: string; length: number } | undefined;
  const flush = () => {
    if (current) blocks.push({ line: current.line, text: current.lines.join('\n') });
    current = undefined;
  };
  source.split(/\r?\n/).forEach((line, index) => {
    const open = FENCE.exec(line);
    if (fence) {
      if (open && open[1]![0] === fence.char && open[1]!.length >= fence.length && line.trim() === open[1]) fence = undefined;
      return;
    }
    if (open && !(open[1]![0] === '`' && line.slice(line.indexOf(open[1]!) + open[1]!.length).includes('`'))) {
      flush();
      fence = { char: open[1]![0]!, length: open[1]!.length };
      return;
    }
    if (line.trim() === '') return flush();
    current ??= { line: index + 1, lines: [] };
    current.lines.push(line);
  });
  flush();
  return blocks;
}

/**
 * The text with every code span blanked out (newlines kept, so line numbers hold), and backslash
 * escapes of the characters a link is made of neutralised.
 */
function withoutInlineCode(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const char = text[i]!;
    if (char === '\\' && i + 1 < text.length && '[]()`!<>'.includes(text[i + 1]!)) {
      out += '  ';
      i += 2;
      continue;
    }
    if (char !== '`') {
      out += char;
      i++;
      continue;
    }
    let run = 1;
    while (text[i + run] === '`') run++;
    let close = -1;
    for (let j = i + run; j < text.length;) {
      if (text[j] !== '`') {
        j++;
        continue;
      }
      let other = 1;
      while (text[j + other] === '`') other++;
      if (other === run) {
        close = j;
        break;
      }
      j += other;
    }
    if (close < 0) {
      out += text.slice(i, i + run);
      i += run;
      continue;
    }
    out += text.slice(i, close + run).replace(/[^\n]/g, ' ');
    i = close + run;
  }
  return out;
}

/** Every inline link and image of the Markdown, outside code, with its line. */
export function markdownLinks(source: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const block of proseBlocks(source)) {
    const text = withoutInlineCode(block.text);
    for (const match of text.matchAll(LINK)) {
      const line = block.line + (text.slice(0, match.index).match(/\n/g)?.length ?? 0);
      links.push({ line, target: match[2]!.replace(/^<(.*)>$/, '$1') });
    }
  }
  return links;
}

/** The text a heading renders: inline code keeps its content, links their text, tags go. */
function headingText(raw: string): string {
  return raw
    .replace(/!?\[((?:[^[\]]|\[[^[\]]*\])*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\\([!-/:-@[-`{-~])/g, '$1');
}

/** github-slugger's slug of one heading: lower case, punctuation but `-` and `_` dropped, each space a `-`. */
export function slugOf(heading: string): string {
  return headingText(heading)
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors GitHub gives the headings of a Markdown file, duplicates numbered as it does (-1, -2...). */
export function headingAnchors(source: string): Set<string> {
  const occurrences = new Map<string, number>();
  const anchors = new Set<string>();
  const add = (heading: string) => {
    const base = slugOf(heading);
    let slug = base;
    while (occurrences.has(slug)) {
      const count = occurrences.get(base)! + 1;
      occurrences.set(base, count);
      slug = `${base}-${count}`;
    }
    occurrences.set(slug, 0);
    anchors.add(slug);
  };
  for (const block of proseBlocks(source)) {
    const lines = block.text.split('\n');
    let paragraph = 0; // where the lines a setext underline would make a heading start
    lines.forEach((line, index) => {
      const atx = ATX_HEADING.exec(line);
      if (atx) {
        add(atx[2] ?? '');
        paragraph = index + 1;
      } else if (SETEXT_UNDERLINE.test(line)) {
        // Plain lines underlined with = or - (after a blank line, `---` is a rule; under a list, a table
        // or a quote, not a heading either).
        const text = lines.slice(paragraph, index);
        if (text.length > 0 && !text.some((l) => NOT_PARAGRAPH.test(l))) add(text.join(' '));
        paragraph = index + 1;
      }
    });
  }
  return anchors;
}

/** The problems of one Markdown file's links; none when every relative link resolves. */
export function checkLinks(file: string, source: string, repo: RepoView): LinkProblem[] {
  const problems: LinkProblem[] = [];
  for (const { line, target } of markdownLinks(source)) {
    const problem = linkProblem(file, source, target, repo);
    if (problem !== undefined) problems.push({ file, line, target, problem });
  }
  return problems;
}

function linkProblem(file: string, source: string, target: string, repo: RepoView): string | undefined {
  if (target === '') return 'empty link target';
  if (EXTERNAL.test(target) || target.startsWith('//')) return undefined;
  if (SCHEME.test(target)) return `scheme ${target.slice(0, target.indexOf(':') + 1)} is not allowed (only http, https, mailto)`;
  const hashAt = target.indexOf('#');
  const pathPart = (hashAt < 0 ? target : target.slice(0, hashAt)).replace(/\?.*$/, '');
  let anchor: string | undefined;
  let path: string;
  try {
    anchor = hashAt < 0 ? undefined : decodeURIComponent(target.slice(hashAt + 1));
    path = decodeURIComponent(pathPart);
  } catch {
    return 'malformed percent-encoding';
  }

  let resolved = file;
  if (path !== '') {
    resolved = path.startsWith('/') ? posix.normalize(path.slice(1)) : posix.join(posix.dirname(file), path);
    resolved = resolved.replace(/\/+$/, '') || '.';
    if (resolved === '..' || resolved.startsWith('../') || posix.isAbsolute(resolved)) return 'points outside the repository';
  }
  const isFile = resolved === file || repo.isFile(resolved);
  if (!isFile && !repo.isFolder(resolved)) return `no file or folder ${resolved} in the repository`;
  if (anchor === undefined) return undefined;
  if (!isFile) return `#${anchor} points into a folder`;
  if (!/\.(?:md|markdown)$/i.test(resolved)) {
    return LINE_ANCHOR.test(anchor) ? undefined : `#${anchor}: ${resolved} has no headings to point at`;
  }
  const anchors = headingAnchors(resolved === file ? source : repo.read(resolved));
  return anchors.has(anchor) ? undefined : `no heading of ${resolved} has the anchor #${anchor}`;
}
