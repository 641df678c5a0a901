import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NodeTimeline } from '../../demo/nodes.js';
import { renderReport } from '../../demo/report.js';
import { checkHistory, type HistoryEvent } from '../../src/testing/index.js';
import { dumpDom } from '../support/chromium.js';

const dir = mkdtempSync(join(tmpdir(), 'distlock-report-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STARTED_AT = 50_000; // the workers' monotonic clock; the page counts from here
const OVERLAP_AT = 20; // the holding at this index starts 2 ms before the previous one ends

/**
 * 60 holdings of 5 ms by three workers taking turns, 2 ms apart, with their writes; holding 20
 * starts 2 ms early (an overlap) and its write lands before its predecessor's (a fence
 * inversion). Node 1 is killed at 200 ms, node 2 paused from 150 to 300 ms.
 */
function syntheticReport(file: string, options: { overlap: boolean }): void {
  const events: HistoryEvent[] = [];
  let at = STARTED_AT + 100;
  for (let i = 0; i < 60; i++) {
    if (options.overlap && i === OVERLAP_AT) at -= 4;
    const worker = `worker ${(i % 3) + 1}`;
    const fence = String(i + 1);
    const common = { worker, resource: 'counter', fence };
    events.push({ type: 'holding', ...common, acquiredAt: at, releasedAt: at + 5 });
    // The store applies it before the previous write: it takes that one's place in the count.
    const inverted = options.overlap && (i === OVERLAP_AT || i === OVERLAP_AT - 1);
    const value = !inverted ? i + 1 : i === OVERLAP_AT ? i : i + 2;
    const early = options.overlap && i === OVERLAP_AT ? -3.5 : 0; // before the previous write
    events.push({ type: 'write', ...common, value, at: at + 4 + early, outcome: 'applied' });
    at += 7;
  }
  const nodes = new NodeTimeline(['node 1 (6401)', 'node 2 (6402)', 'node 3 (6403)']);
  nodes.set(0, 'killed', 200);
  nodes.set(1, 'paused', 150);
  nodes.set(1, 'up', 300);
  const report = checkHistory(events, new Map([['counter', 60]]));
  const html = renderReport({
    startedAt: STARTED_AT,
    holdings: events.filter((e) => e.type === 'holding'),
    nodes: nodes.lanes(at - STARTED_AT + 20),
    faults: [
      { at: 150, label: 'SIGSTOP node 2' },
      { at: 200, label: 'kill -9 node 1 </script><b>' }, // must stay text
      { at: 300, label: 'SIGCONT node 2' },
    ],
    violations: report,
    summary: [`violations ${report.overlaps.length} overlapping holdings`],
  });
  writeFileSync(file, html);
}

/** The attributes of every element whose class list contains `className`. */
function elements(dom: string, className: string): Record<string, string>[] {
  return [...dom.matchAll(/<[\w-]+\s([^>]*)>/g)]
    .map((tag) =>
      Object.fromEntries(
        [...(tag[1] ?? '').matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1], a[2]]),
      ),
    )
    .filter((attrs) => (attrs.class ?? '').split(' ').includes(className));
}

/** The `<svg id=...>` element's markup. */
function svg(dom: string, id: string): string {
  return new RegExp(`<svg id="${id}"[^>]*>.*?</svg>`, 's').exec(dom)?.[0] ?? '';
}

function svgWidth(dom: string, id: string): number {
  return Number(/^<svg [^>]* width="([\d.]+)"/.exec(svg(dom, id))?.[1]);
}

const withOverlap = join(dir, 'overlap.html');
const clean = join(dir, 'clean.html');
syntheticReport(withOverlap, { overlap: true });
syntheticReport(clean, { overlap: false });

describe('demo report in headless Chromium', () => {
  it.each([800, 1400])(
    'at %i px: worker and node lanes, the overlap in red, the histogram, the width',
    async (width) => {
      const dom = await dumpDom(withOverlap, { width });
      for (const id of ['overview', 'lanes', 'histogram']) {
        expect(svgWidth(dom, id)).toBeGreaterThan(width - 80); // the body's margins, no more
        expect(svgWidth(dom, id)).toBeLessThanOrEqual(width);
      }
      const lanes = svg(dom, 'lanes');
      expect(elements(lanes, 'worker-lane').map((lane) => lane['data-worker'])).toEqual([
        'worker 1',
        'worker 2',
        'worker 3',
      ]);
      const states = (node: string) =>
        [...lanes.matchAll(new RegExp(`data-node="${node}[^"]*">(.*?)</g>`, 'g'))]
          .flatMap((lane) => elements(lane[1] ?? '', 'node-state'))
          .map((segment) => segment['data-state']);
      expect(states('node 1')).toEqual(['up', 'killed']);
      expect(states('node 2')).toEqual(['up', 'paused', 'up']);
      expect(states('node 3')).toEqual(['up']);
      expect(elements(lanes, 'overlap')).toHaveLength(1);
      expect(elements(lanes, 'fence-inversion')).toHaveLength(1);
      expect(elements(svg(dom, 'overview'), 'overlap-tick')).toHaveLength(2);
      expect(dom).toMatch(/class="legend-overlaps bad">.*1 overlapping holding</);
      const bars = elements(svg(dom, 'histogram'), 'hist-bar');
      expect(bars.filter((b) => b.class === 'hist-bar overlap')).toHaveLength(1);
      expect(bars.filter((b) => b.class === 'hist-bar').length).toBeGreaterThan(1);
      expect(dom).toContain('kill -9 node 1 &lt;/script&gt;&lt;b&gt;');
    },
  );

  it('zoomed to a 50 ms window: single holdings with their fences, the hand-offs, the overlap', async () => {
    const from = 100 + OVERLAP_AT * 7 - 4 - 25;
    const dom = await dumpDom(withOverlap, { width: 1400, hash: `#from=${from}&to=${from + 50}` });
    expect(dom).toMatch(/id="window-label">showing 0\.\d+ s to 0\.\d+ s \(50\.00 ms\)</);
    const lanes = svg(dom, 'lanes');
    expect(elements(lanes, 'holding-density')).toHaveLength(0);
    const holdings = elements(lanes, 'holding');
    expect(holdings.length).toBeGreaterThanOrEqual(6);
    for (const h of holdings.filter((h) => Number(h.x) > 150 && Number(h.x) < 1200)) {
      expect(Number(h.width)).toBeGreaterThan(100); // 5 ms of 50 across ~1250 px
    }
    expect(holdings.filter((h) => h.class === 'holding overlapping')).toHaveLength(2);
    expect(elements(lanes, 'handoff').length).toBeGreaterThanOrEqual(4);
    expect(lanes).toMatch(/class="handoff-label">2\.0 ms</);
    expect(lanes).toMatch(/class="fence-label">fence 21</);
    expect(elements(lanes, 'overlap')).toHaveLength(1);
  });

  it('a run without violations says so, with nothing red on the timeline', async () => {
    const dom = await dumpDom(clean, { width: 1000 });
    expect(dom).toMatch(/class="legend-overlaps">.*0 overlapping holdings</);
    expect(dom).toMatch(/class="none">None: 0 overlapping holdings/);
    expect(elements(svg(dom, 'lanes'), 'overlap')).toHaveLength(0);
    expect(elements(svg(dom, 'lanes'), 'fence-inversion')).toHaveLength(0);
    expect(elements(svg(dom, 'overview'), 'overlap-tick')).toHaveLength(0);
    expect(elements(svg(dom, 'histogram'), 'overlap')).toHaveLength(0);
  });

  it('zooms and pans: a drag on the overview, the wheel and a drag on the lanes, a resize', async () => {
    // Synthetic events, in the page itself; each step leaves the window it shows in a data-*.
    const interactions = `<script>
Element.prototype.setPointerCapture = () => {}; // the synthetic pointer is not a real one
const lanes = document.getElementById('lanes');
const pointer = (svg, type, dx) => {
  const box = svg.getBoundingClientRect();
  const init = { clientX: box.left + dx, clientY: box.top + 10, pointerId: 1, bubbles: true };
  svg.dispatchEvent(new PointerEvent(type, init));
};
const drag = (svg, from, to) => {
  pointer(svg, 'pointerdown', from);
  pointer(svg, 'pointermove', to);
  pointer(svg, 'pointerup', to);
};
drag(document.getElementById('overview'), 400, 450);
document.body.dataset.brushed = location.hash;
const box = lanes.getBoundingClientRect();
lanes.dispatchEvent(new WheelEvent('wheel', { deltaY: -100, clientX: box.left + 600, clientY: box.top + 50, bubbles: true, cancelable: true }));
document.body.dataset.wheeled = location.hash;
drag(lanes, 600, 500);
document.body.dataset.panned = location.hash;
document.body.style.width = '500px';
window.dispatchEvent(new Event('resize'));
</script></body>`;
    const file = join(dir, 'interactions.html');
    writeFileSync(file, readFileSync(withOverlap, 'utf8').replace('</body>', interactions));
    const dom = await dumpDom(file, { width: 1400 });
    const view = (name: string) => {
      const hash = new RegExp(`data-${name}="#from=([\\d.]+)&amp;to=([\\d.]+)"`).exec(dom);
      return { from: Number(hash?.[1]), length: Number(hash?.[2]) - Number(hash?.[1]) };
    };
    const [brushed, wheeled, panned] = [view('brushed'), view('wheeled'), view('panned')];
    // 50 of the overview's ~1210 px (1400 less margins and labels) over a 0.54 s run: ~22 ms.
    expect(brushed.length).toBeGreaterThan(15);
    expect(brushed.length).toBeLessThan(30);
    expect(wheeled.length).toBeCloseTo(brushed.length * 0.8, 2);
    expect(panned.length).toBeCloseTo(wheeled.length, 2);
    // Dragged 100 px to the left across ~1210 px: later by about 8% of the window.
    expect(panned.from - wheeled.from).toBeCloseTo((wheeled.length * 100) / 1210, 0);
    expect(svgWidth(dom, 'lanes')).toBe(500);
  });

  it('is one self-contained file, red for overlaps', () => {
    const html = readFileSync(withOverlap, 'utf8');
    expect(html).not.toMatch(/<(script|img|link|iframe)\s[^>]*(src|href)=/i);
    expect(html).not.toMatch(/url\((?!#)|@import|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect(html.match(/<\/script>/g)).toHaveLength(2); // the data's `</` is escaped
    expect(html).toMatch(/--overlap: #d62728;/);
    expect(html).toMatch(/\.overlap,\n[^{]*\{\n {2}fill: var\(--overlap\);/);
  });
});
