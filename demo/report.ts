import { readFileSync } from 'node:fs';
import { type ReportData, type ReportInput, toReportData } from './report-data.js';

export type { Fault, ReportInput } from './report-data.js';

/** The page's scripts (ES modules in demo/page/), each after those it imports. */
const SCRIPTS = [
  'svg.js',
  'density.js',
  'marks.js',
  'lanes.js',
  'overview.js',
  'histogram.js',
  'main.js',
];
const page = (file: string) => readFileSync(new URL(`./page/${file}`, import.meta.url), 'utf8');

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c,
  );

/**
 * A self-contained HTML page (no network: inline CSS, JS and data) showing who held the lock
 * when: one lane per worker with every holding, one lane per Redis node with its up, paused
 * and killed intervals, the injected faults, the violations the history checker found
 * (overlapping holdings in red), and a histogram of the hand-off latency. The timeline follows
 * the window's width and zooms (drag on the overview strip, wheel or drag on the lanes, or the
 * buttons) down to single holdings; the window shown is kept in the URL's hash
 * (`#from=2300&to=2350`, in ms from the start).
 *
 * @example
 * ```ts
 * writeFileSync('report.html', renderReport({ startedAt, holdings, nodes, faults, violations, summary }));
 * ```
 */
export function renderReport(input: ReportInput): string {
  const data = toReportData(input);
  // `<` as \u003c: the JSON can never close its <script> element or open a comment.
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  const script = inlineModules(SCRIPTS);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>distlock demo: who held the lock when</title>
<style>
${page('style.css')}</style></head>
<body>
<h1>distlock demo: who held the lock when</h1>
<pre class="summary">${escapeHtml(data.summary.join('\n'))}</pre>
${legend(data)}
<section class="timeline">
<div class="controls">
<button type="button" data-zoom="in" title="zoom in around the middle">zoom in</button>
<button type="button" data-zoom="out" title="zoom out around the middle">zoom out</button>
<button type="button" data-pan="-1" title="move left by half a window">&larr;</button>
<button type="button" data-pan="1" title="move right by half a window">&rarr;</button>
<button type="button" data-zoom="50" title="a 50 ms window: single holdings and hand-offs">50 ms</button>
<button type="button" data-zoom="reset">whole run</button>
<span id="window-label"></span>
</div>
<svg id="overview" role="img" aria-label="the whole run; drag to choose the window below"></svg>
<svg id="lanes" role="img" aria-label="holdings per worker and node states in the chosen window"></svg>
<p class="hint">Drag across the strip above to choose a window; on the lanes, the wheel zooms and dragging pans. Narrow windows show single holdings (hover for worker, fence and length) and the hand-offs between them; wide ones shade each lane by the share of time its worker held the lock.</p>
</section>
<section><h2>Violations</h2><ul id="violations"></ul></section>
<section><h2>Hand-off latency</h2>
<p>${handOffCaption(data)}</p>
<svg id="histogram" role="img" aria-label="histogram of hand-off latency"></svg></section>
<script type="application/json" id="report-data">${json}</script>
<script>
${script}
</script>
</body></html>
`;
}

/**
 * One classic script from ES modules (a file:// page cannot load modules): each module runs in
 * its own function scope and returns what it exports; `import { a } from './m.js'` reads them.
 * The modules use only named imports of siblings and `export` on declarations.
 */
function inlineModules(files: readonly string[]): string {
  const modules = files.map((file) => {
    const source = page(file);
    const exported = [...source.matchAll(/^export (?:function|const|let|class) (\w+)/gm)];
    const body = source
      .replace(/^import \{([^}]*)\} from '\.\/([\w.-]+)';$/gm, "const {$1} = modules['$2'];")
      .replace(/^export /gm, '');
    if (/^import |<\/script/im.test(body)) throw new Error(`demo/page/${file}: cannot inline it`);
    return `modules['${file}'] = (() => {\n${body}\nreturn { ${exported.map((m) => m[1]).join(', ')} };\n})();`;
  });
  return `(() => {\n'use strict';\nconst modules = {};\n${modules.join('\n')}\n})();`;
}

function legend(data: ReportData): string {
  const overlaps = data.overlaps.length;
  const inversions = data.fenceInversions.length;
  const entry = (swatch: string, text: string, extra = '') =>
    `<li${extra}><span class="swatch ${swatch}"></span>${escapeHtml(text)}</li>`;
  return `<ul class="legend">
${entry('holding', 'holding (one acquire to release)')}
${entry('handoff', 'hand-off: release to next acquisition')}
${entry('overlap', `${overlaps} overlapping holding${overlaps === 1 ? '' : 's'}`, ` class="legend-overlaps${overlaps ? ' bad' : ''}"`)}
${entry('fence-inversion', `${inversions} write${inversions === 1 ? '' : 's'} out of fence order`, ` class="legend-fences${inversions ? ' bad' : ''}"`)}
${entry('node-up', 'node up')}
${entry('node-paused', 'node paused (SIGSTOP)')}
${entry('node-killed', 'node killed (kill -9)')}
${entry('fault', 'fault injected')}
</ul>`;
}

function handOffCaption({ handOff }: ReportData): string {
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  const overlapping = handOff.negative
    ? `; <strong class="bad">${handOff.negative} overlapping</strong> (the next holder acquired before the release)`
    : '';
  return `${handOff.count} hand-offs: p50 ${ms(handOff.p50Ms)}, p99 ${ms(handOff.p99Ms)}, max ${ms(handOff.maxMs)}${overlapping}. Bins widen as gaps grow (edges 0, 0.5, 1, 1.5, 2, 3, 4, 6 ... ms).`;
}
