// The hand-off latency histogram: how long the lock stayed free between one release and the
// next acquisition. Bins widen with the gap; overlapping hand-offs (negative gaps) get a red bar.
import { niceTicks, resetSvg, svgEl } from './svg.js';

const HEIGHT_PX = 230;

/** Draws `handOff` (see demo/handoff.ts) `width` px wide. */
export function drawHistogram(svg, handOff, width) {
  const [left, right, top, bottom] = [52, Math.max(120, width - 16), 34, HEIGHT_PX - 44];
  resetSvg(svg, width, HEIGHT_PX);
  const negative = handOff.negative
    ? [{ label: 'overlap', count: handOff.negative, overlap: true }]
    : [];
  const bars = [
    ...negative,
    ...handOff.bins.map((b) => ({ ...b, label: `${b.fromMs} to ${b.toMs} ms` })),
  ];
  const slot = (right - left) / Math.max(1, bars.length);
  const highest = Math.max(1, ...bars.map((b) => b.count));
  const { step } = niceTicks(0, highest, 4);
  const maxCount = Math.ceil(highest / step) * step; // the axis ends on a round count
  const ticks = Array.from({ length: maxCount / step + 1 }, (_, i) => i * step);
  const y = (count) => bottom - (count / maxCount) * (bottom - top);
  const total = Math.max(1, handOff.count);

  for (const count of ticks) {
    svgEl(svg, 'line', { x1: left, x2: right, y1: y(count), y2: y(count), class: 'grid' });
    svgEl(svg, 'text', { x: left - 6, y: y(count) + 4, class: 'tick y' }, { text: String(count) });
  }
  bars.forEach((bar, i) => {
    const bx = left + i * slot + slot * 0.08;
    const share = ((100 * bar.count) / total).toFixed(1);
    svgEl(
      svg,
      'rect',
      {
        x: bx,
        y: y(bar.count),
        width: slot * 0.84,
        height: Math.max(bar.count ? 1 : 0, bottom - y(bar.count)),
        class: bar.overlap ? 'hist-bar overlap' : 'hist-bar',
      },
      { title: `${bar.label}: ${bar.count} hand-offs (${share}%)` },
    );
    if (bar.count > 0 && slot >= 18) {
      const text = String(bar.count);
      svgEl(
        svg,
        'text',
        { x: bx + slot * 0.42, y: y(bar.count) - 4, class: 'hist-count' },
        { text },
      );
    }
  });

  // Edges under the boundaries between bars; every other one when they would collide.
  const every = slot < 26 ? 2 : 1;
  handOff.bins.forEach((b, i) => {
    const edgeX = left + (i + negative.length) * slot;
    if (i % every === 0) {
      svgEl(svg, 'text', { x: edgeX, y: bottom + 14, class: 'tick' }, { text: String(b.fromMs) });
    }
    if (i === handOff.bins.length - 1) {
      svgEl(
        svg,
        'text',
        { x: edgeX + slot, y: bottom + 14, class: 'tick' },
        { text: String(b.toMs) },
      );
    }
  });
  // Above the bars' counts, one row each so that close percentiles stay readable.
  for (const [row, name, value] of [
    [0, 'p50', handOff.p50Ms],
    [1, 'p99', handOff.p99Ms],
  ]) {
    const i = handOff.bins.findIndex((b) => value >= b.fromMs && value < b.toMs);
    if (i === -1 || value < 0) continue;
    const bin = handOff.bins[i];
    const mx = left + (i + negative.length + (value - bin.fromMs) / (bin.toMs - bin.fromMs)) * slot;
    const labelY = top - 22 + row * 10;
    svgEl(svg, 'line', { x1: mx, x2: mx, y1: labelY - 8, y2: bottom, class: 'hist-marker' });
    const text = `${name} ${value.toFixed(2)} ms`;
    svgEl(svg, 'text', { x: mx + 3, y: labelY, class: 'hist-marker-label' }, { text });
  }
  svgEl(
    svg,
    'text',
    { x: (left + right) / 2, y: bottom + 34, class: 'axis-title' },
    { text: 'ms from a release to the next acquisition (bins widen as the gap grows)' },
  );
}
