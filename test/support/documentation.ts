import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root, whatever the working directory. */
export const REPO = new URL('../..', import.meta.url).pathname;

/**
 * The pages whose code blocks, command lines and links the suite checks: the README, every
 * page of docs/ and the benchmarks' README. Paths are relative to the repository's root.
 */
export function documentationPages(): string[] {
  const docs = readdirSync(join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  const bench = existsSync(join(REPO, 'bench/README.md')) ? ['bench/README.md'] : [];
  return ['README.md', ...docs, ...bench];
}

/** The text of `page` (a path relative to the repository's root). */
export function readPage(page: string): string {
  return readFileSync(join(REPO, page), 'utf8');
}

/** One line of a page outside its fenced code blocks, or one line of a fenced block. */
export interface PageLine {
  /** 1-based. */
  readonly line: number;
  readonly text: string;
}

/**
 * Splits `markdown` into the lines outside fenced code blocks and the fenced blocks
 * themselves (each with the language of its opening fence and the line of that fence).
 */
export function parseFences(
  page: string,
  markdown: string,
): {
  prose: PageLine[];
  blocks: { line: number; language: string; lines: PageLine[] }[];
} {
  const lines = markdown.split('\n');
  const prose: PageLine[] = [];
  const blocks: { line: number; language: string; lines: PageLine[] }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] ?? '';
    const fence = /^(`{3,}|~{3,})\s*([\w-]*)/.exec(text);
    if (!fence) {
      prose.push({ line: i + 1, text });
      continue;
    }
    const marker = fence[1] as string;
    const end = lines.findIndex((closing, j) => j > i && closing.trimEnd() === marker);
    if (end < 0) throw new Error(`${page}:${i + 1}: code block never closed`);
    blocks.push({
      line: i + 1,
      language: fence[2] ?? '',
      lines: lines.slice(i + 1, end).map((body, k) => ({ line: i + 2 + k, text: body })),
    });
    i = end;
  }
  return { prose, blocks };
}
