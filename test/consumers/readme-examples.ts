/** A TypeScript or JavaScript code block of the README. */
export interface ReadmeExample {
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

/** Every ```ts and ```js block of `markdown`, as written. */
export function readmeExamples(markdown: string): ReadmeExample[] {
  const lines = markdown.split('\n');
  const examples: ReadmeExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const language = /^```(ts|js)\s*$/.exec(lines[i] ?? '')?.[1];
    if (language !== 'ts' && language !== 'js') continue;
    const end = lines.findIndex((text, j) => j > i && text.startsWith('```'));
    if (end < 0) throw new Error(`README.md:${i + 1}: code block never closed`);
    examples.push({
      line: i + 1,
      language,
      code: lines.slice(i + 1, end).join('\n'),
      runs: lines[i - 1]?.trim() === RUNS_MARK,
    });
    i = end;
  }
  return examples;
}

/**
 * The file an example is written to in a consumer project: `readme/line-0029.ts`, or `.mjs`
 * for a JavaScript block (type-checked as JavaScript, so TypeScript syntax there fails).
 */
export function exampleFile(example: ReadmeExample): string {
  const extension = example.language === 'ts' ? 'ts' : 'mjs';
  return `readme/line-${String(example.line).padStart(4, '0')}.${extension}`;
}
