/**
 * Every relative link of the README, of docs/ and of bench/README.md leads somewhere: to a
 * file or directory that exists and, for a `#anchor` into a Markdown page, to a heading of
 * that page (by GitHub's slugs).
 */
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  documentationPages,
  type PageLine,
  parseFences,
  REPO,
  readPage,
} from '../support/documentation.js';

/**
 * GitHub's anchor for a heading: the text as rendered (no code ticks, links reduced to their
 * text), lowercased, every character but letters, digits, spaces, '-' and '_' dropped, and
 * spaces turned into '-'.
 */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings; a repeated one gets -1, -2... as on GitHub. */
function anchors(prose: readonly PageLine[]): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const { text } of prose) {
    const heading = /^#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** The targets of the inline links and images of a page's prose, outside code spans. */
function links(prose: readonly PageLine[]): { line: number; target: string }[] {
  return prose.flatMap(({ line, text }) =>
    [...text.replace(/`[^`]*`/g, 'code').matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?[^)]*\)/g)].map(
      (match) => ({ line, target: match[1] as string }),
    ),
  );
}

const pages = documentationPages();
const parsed = new Map(pages.map((page) => [page, parseFences(page, readPage(page)).prose]));
const anchorsOf = new Map<string, Set<string>>();
function anchorsOfPage(page: string): Set<string> {
  let found = anchorsOf.get(page);
  if (!found) {
    found = anchors(parsed.get(page) ?? parseFences(page, readPage(page)).prose);
    anchorsOf.set(page, found);
  }
  return found;
}

describe('slug', () => {
  it('follows GitHub', () => {
    expect(slug('Several resources at once: `acquireAll`')).toBe(
      'several-resources-at-once-acquireall',
    );
    expect(slug('Running on N masters (Redlock)')).toBe('running-on-n-masters-redlock');
    expect(slug('1. Uncontended acquire + release (distinct keys)')).toBe(
      '1-uncontended-acquire--release-distinct-keys',
    );
    expect(slug('Testing kit: `distlock/testing`')).toBe('testing-kit-distlocktesting');
    expect(slug('lock_key and fence-counter')).toBe('lock_key-and-fence-counter');
  });
});

describe('the links of the README, docs/ and bench/README.md', () => {
  const all = pages.flatMap((page) =>
    links(parsed.get(page) ?? []).map((link) => ({ page, ...link })),
  );
  const relative = all.filter(({ target }) => !/^[a-z][a-z0-9+.-]*:/i.test(target));

  it('are found, and the README links to every other page', () => {
    expect(relative.length).toBeGreaterThan(30);
    const fromReadme = new Set(
      relative.filter(({ page }) => page === 'README.md').map(({ target }) => target.split('#')[0]),
    );
    expect(pages.filter((page) => page !== 'README.md' && !fromReadme.has(page))).toEqual([]);
  });

  it('lead to files that exist, and to headings that exist', () => {
    const broken: string[] = [];
    for (const { page, line, target } of relative) {
      const [path = '', anchor] = target.split('#', 2);
      const file = path === '' ? page : normalize(join(dirname(page), decodeURI(path)));
      if (file.startsWith('..') || !existsSync(join(REPO, file))) {
        broken.push(`${page}:${line}: ${target} (no file ${file})`);
        continue;
      }
      if (anchor === undefined || !file.endsWith('.md')) continue;
      if (!anchorsOfPage(file).has(decodeURIComponent(anchor))) {
        broken.push(`${page}:${line}: ${target} (no heading #${anchor} in ${file})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
