import type { Holding } from '../src/testing/index.js';

/** A fault the demo injected, at `at` ms after the start. */
export interface Fault {
  readonly at: number;
  readonly label: string;
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c,
  );

/** A self-contained HTML page: who held the lock when (one row per worker), and the faults. */
export function renderReport(input: {
  holdings: readonly Holding[];
  faults: readonly Fault[];
  startedAt: number;
  seconds: number;
  summary: readonly string[];
}): string {
  const { holdings, faults, startedAt, seconds, summary } = input;
  const workers = [...new Set(holdings.map((h) => h.worker))].sort();
  const width = 1000;
  const row = 28;
  const left = 90;
  // The workers start a little after the demo and may end after its nominal length.
  const lastMs = Math.max(seconds * 1_000, ...holdings.map((h) => h.releasedAt - startedAt));
  const spanSeconds = Math.ceil(lastMs / 1_000);
  const x = (t: number) => left + ((t - startedAt) / (spanSeconds * 1_000)) * (width - left - 10);
  const height = workers.length * row + 60;
  const bars = holdings
    .map((h) => {
      const y = 30 + workers.indexOf(h.worker) * row;
      const w = Math.max(1, x(h.releasedAt) - x(h.acquiredAt));
      return `<rect x="${x(h.acquiredAt).toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${row - 8}" fill="#2a7ab0"><title>${escapeHtml(h.worker)} fence ${h.fence ?? '-'}: ${(h.releasedAt - h.acquiredAt).toFixed(1)} ms</title></rect>`;
    })
    .join('\n');
  const labels = workers
    .map((w, i) => `<text x="4" y="${30 + i * row + 15}" font-size="12">${escapeHtml(w)}</text>`)
    .join('\n');
  const faultMarks = faults
    .map((f, i) => {
      const fx = x(startedAt + f.at).toFixed(1);
      return `<line x1="${fx}" y1="20" x2="${fx}" y2="${height - 20}" stroke="#c0392b" stroke-dasharray="4 3"/><text x="${fx}" y="${12 + (i % 2) * 0}" font-size="11" fill="#c0392b">${escapeHtml(f.label)}</text>`;
    })
    .join('\n');
  const ticks = Array.from({ length: spanSeconds + 1 }, (_, s) => {
    const tx = x(startedAt + s * 1_000).toFixed(1);
    return `<text x="${tx}" y="${height - 5}" font-size="10" fill="#666">${s}s</text>`;
  }).join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>distlock demo</title>
<style>body{font-family:system-ui,sans-serif;margin:24px}pre{background:#f4f4f4;padding:12px}</style></head>
<body>
<h1>distlock demo: who held the lock when</h1>
<pre>${escapeHtml(summary.join('\n'))}</pre>
<p>Each bar is one holding (hover for its fence and length). Dashed red lines are the faults.</p>
<svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">
${faultMarks}
${labels}
${bars}
${ticks}
</svg>
</body></html>
`;
}
