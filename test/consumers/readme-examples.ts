import { documentationPages, parseFences, readPage } from '../support/documentation.js';

/** A TypeScript or JavaScript code block of the README, of docs/ or of bench/README.md. */
export interface ReadmeExample {
  /** The page it is on, relative to the repository's root (`docs/cli.md`). */
  readonly page: string;
  /** The line of its opening fence (1-based), which also names its file. */
  readonly line: number;
  readonly language: 'ts' | 'js';
  readonly code: string;
  /**
   * Marked `<!-- example: runs -->` on the line before its fence: a whole program, executed
   * by the suite. The others are type-checked against the names in readme-globals.d.ts.
   */
  readonly runs: boolean;
}

const RUNS_MARK = '<!-- example: runs -->';

/** Every ```ts and ```js block of `markdown` (the text of `page`), as written. */
export function readmeExamples(page: string, markdown: string): ReadmeExample[] {
  const lines = markdown.split('\n');
  const examples: ReadmeExample[] = [];
  for (const block of parseFences(page, markdown).blocks) {
    const language = block.language;
    if (language !== 'ts' && language !== 'js') continue;
    examples.push({
      page,
      line: block.line,
      language,
      code: block.lines.map((l) => l.text).join('\n'),
      runs: lines[block.line - 2]?.trim() === RUNS_MARK,
    });
  }
  return examples;
}

/** The examples of every documentation page, page by page in `documentationPages()` order. */
export function documentationExamples(): ReadmeExample[] {
  return documentationPages().flatMap((page) => readmeExamples(page, readPage(page)));
}

/** Where an example is written: `docs/cli.md:42`. */
export function exampleSource(example: ReadmeExample, row = 0): string {
  return `${example.page}:${example.line + row}`;
}

/**
 * The file an example is written to in a consumer project, named by its page and line:
 * `readme/readme-line-0041.ts`, `readme/docs-cli-line-0042.ts`, or `.mjs` for a JavaScript
 * block (type-checked as JavaScript, so TypeScript syntax there fails).
 */
export function exampleFile(example: ReadmeExample): string {
  const extension = example.language === 'ts' ? 'ts' : 'mjs';
  const page = example.page
    .replace(/\.md$/i, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .toLowerCase();
  return `readme/${page}-line-${String(example.line).padStart(4, '0')}.${extension}`;
}

/**
 * Compiler output with each example file's position (`readme/docs-cli-line-0042.ts(3,5)`)
 * followed by the page and line it stands for (`[docs/cli.md:45]`).
 */
export function withSources(output: string, examples: readonly ReadmeExample[]): string {
  const byFile = new Map(examples.map((example) => [exampleFile(example), example]));
  return output.replace(/(readme\/[\w.-]+)\((\d+),(\d+)\)/g, (match, file: string, row) => {
    const example = byFile.get(file);
    return example ? `${match} [${exampleSource(example, Number(row))}]` : match;
  });
}
