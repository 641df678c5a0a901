import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReportData } from '../../demo/report-data.js';
import { dumpDom } from '../support/chromium.js';

const DEFAULT_REPORT = 'demo/results/report.html';
const out = mkdtempSync(join(tmpdir(), 'distlock-demo-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The default report's modification time, or undefined when there is none. */
const defaultReportMtime = () =>
  existsSync(DEFAULT_REPORT) ? statSync(DEFAULT_REPORT).mtimeMs : undefined;

/** The data the report's page draws, embedded in it as JSON. */
function reportData(html: string): ReportData {
  const json = /<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html);
  return JSON.parse(json?.[1] ?? 'null') as ReportData;
}

describe('npm run demo', () => {
  it('runs the workers through the faults with no violation and writes the HTML report where told', async () => {
    const before = defaultReportMtime();
    // Piped, as in CI: the progress lines are printed once a second, then the final one.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'demo/main.ts', '--out', out],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(stdout).toMatch(/faults injected +kill -9 node 1 .*; SIGSTOP node 2 .*; SIGCONT node 2/);
    expect(stdout).toContain(
      'violations          0 overlapping holdings, 0 writes out of fence order, 0 lost writes',
    );
    expect(stdout).toMatch(/counter +expected (\d+), final \1 \(no update lost\)/);

    // The last progress line and the summary show the same numbers.
    const progress = stdout.split('\n').filter((line) => line.startsWith('['));
    const last = /^\[#{24}\] [\d.]+s {2}acquisitions (\d+) {2}counter (\d+) .*\(done\)$/.exec(
      progress.at(-1) ?? '',
    );
    const acquisitions = /^acquisitions +(\d+) by/m.exec(stdout)?.[1];
    const expected = /^counter +expected (\d+)/m.exec(stdout)?.[1];
    expect(last?.slice(1)).toEqual([acquisitions, expected]);
    expect(Number(acquisitions)).toBeGreaterThan(100);

    const report = join(out, 'report.html');
    expect(stdout).toContain(`report              ${report}`);
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('<svg id="lanes"');

    // Every fault lands while a worker holds the lock, by the timeline the report draws.
    const data = reportData(html);
    const held = (atMs: number) => data.holdings.some((h) => h.fromMs <= atMs && atMs <= h.toMs);
    const faults = data.faults.map((f) => ({ fault: f.label, held: held(f.atMs) }));
    expect(faults).toEqual(data.faults.map((f) => ({ fault: f.label, held: true })));
    expect(faults).toHaveLength(3);
    // The summary's duration is the timeline's span, to the summary's 0.1 s.
    const seconds = Number(/^acquisitions +\d+ by \d+ workers in ([\d.]+) s,/m.exec(stdout)?.[1]);
    expect(Math.abs(seconds * 1_000 - data.spanMs)).toBeLessThanOrEqual(50);
    expect(defaultReportMtime()).toBe(before); // the user's own report is left alone
  }, 60_000);

  it("the report shows the run's workers, the killed and the paused node, and no violation", async () => {
    const dom = await dumpDom(join(out, 'report.html'), { width: 1400 });
    const workers = [...dom.matchAll(/class="lane worker-lane [a-z]+" data-worker="([^"]+)"/g)];
    expect(workers.map((w) => w[1])).toEqual(['worker 1', 'worker 2', 'worker 3', 'worker 4']);
    const states = (node: number) =>
      [...dom.matchAll(new RegExp(`data-node="node ${node} [^"]*">(.*?)</g>`, 'g'))]
        .flatMap((lane) => [...(lane[1] ?? '').matchAll(/data-state="(\w+)"/g)])
        .map((state) => state[1]);
    expect(states(1)).toEqual(['up', 'killed']);
    expect(states(2)).toEqual(['up', 'paused', 'up']);
    for (const node of [3, 4, 5]) expect(states(node)).toEqual(['up']);
    expect(dom).toMatch(/class="legend-overlaps">.*0 overlapping holdings</);
    expect(dom).toMatch(/class="hist-bar"/);
    expect(dom).not.toMatch(/class="overlap"/);
  });
});
