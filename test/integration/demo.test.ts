import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('npm run demo', () => {
  it('runs the workers through the faults with no violation and writes the HTML report', () => {
    const output = execFileSync(process.execPath, ['--import', 'tsx', 'demo/main.ts'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(output).toMatch(/faults injected +kill -9 node 1 .*; SIGSTOP node 2 .*; SIGCONT node 2/);
    expect(output).toContain(
      'violations          0 overlapping holdings, 0 writes out of fence order, 0 lost writes',
    );
    expect(output).toMatch(/counter +expected (\d+), final \1 \(no update lost\)/);
    expect(existsSync('demo/results/report.html')).toBe(true);
    expect(readFileSync('demo/results/report.html', 'utf8')).toContain('<svg');
  }, 60_000);
});
