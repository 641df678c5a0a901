import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(1);

/** The `src/...` files named in the part of docs/architecture.md from `start` to `end`. */
function filesNamed(start: string, end: string): string[] {
  const doc = readFileSync('docs/architecture.md', 'utf8');
  const part = doc.slice(doc.indexOf(start), doc.indexOf(end, doc.indexOf(start)));
  const named = [...part.matchAll(/`src\/([\w/.-]+\.ts)`/g)].map((m) => m[1] ?? '');
  return [...new Set(named)].sort();
}

/** Which src files one plain acquire and its release ran code in (test/support/acquire-path.ts). */
function measuredPath(url: string): { acquire: string[]; release: string[] } {
  const output = execFileSync(
    process.execPath,
    ['--import', 'tsx', 'test/support/acquire-path.ts', url],
    { encoding: 'utf8', timeout: 30_000 },
  );
  const [acquire, release] = output
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  return { acquire: acquire.acquire, release: release.release };
}

describe('docs/architecture.md', () => {
  it('names exactly the files one plain acquisition runs code in, and files its release does', () => {
    const path = measuredPath(fixture().redis.urls[0] ?? '');
    expect(path.acquire.length).toBeGreaterThan(5);
    expect(filesNamed('## One acquisition, top to bottom', '### Release')).toEqual(path.acquire);
    const release = filesNamed('### Release', '## Where a new piece goes');
    expect(release.filter((file) => !path.release.includes(file))).toEqual([]);
  });
});
