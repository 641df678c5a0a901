// The detailed timeline for the window `view` = { fromMs, toMs }: one lane per worker with its
// holdings and the hand-offs between them, then the violations, the node lanes and the faults
// (marks.js).
import { drawDensity, fitLabel, placeLabels } from './density.js';
import { drawFaults, drawFenceInversions, drawNodeLanes, drawOverlaps } from './marks.js';
import { formatDuration, formatSeconds, niceTicks, resetSvg, svgEl, timeScale } from './svg.js';

export const LABEL_PX = 112;
export const RIGHT_PX = 16;
const WORKER_PX = 30;
const NODE_PX = 22;
const FAULT_ROW_PX = 15;
/** When a typical holding is narrower, the lanes are shaded per bucket of pixels instead. */
const MIN_HOLDING_PX = 3;
/** Above this many holdings in the window, hand-off lines would only be clutter. */
const MAX_HANDOFFS = 150;

/** Draws the lanes `width` px wide; returns the time scale and the plot's px bounds. */
export function drawLanes(svg, data, view, width) {
  const left = LABEL_PX;
  const right = Math.max(left + 50, width - RIGHT_PX);
  const x = timeScale(view.fromMs, view.toMs, left, right);
  const inView = (from, to) => to >= view.fromMs && from <= view.toMs;
  const faults = data.faults.filter((f) => inView(f.atMs, f.atMs));
  const faultRows = placeLabels(
    faults.map((f) => x(f.atMs)),
    150,
  );
  const top = 8 + (Math.max(0, ...faultRows) + 1) * FAULT_ROW_PX;
  const workerY = (w) => top + w * WORKER_PX;
  const nodesTop = workerY(data.workers.length) + 12;
  const bottom = nodesTop + data.nodes.length * NODE_PX;
  const layout = { x, left, right, top, bottom, inView, workerY, laneHeight: WORKER_PX };
  resetSvg(svg, width, bottom + 26);

  const clip = svgEl(svgEl(svg, 'defs'), 'clipPath', { id: 'plot-clip' });
  svgEl(clip, 'rect', { x: left, y: 0, width: right - left, height: bottom + 26 });
  const plot = svgEl(svg, 'g', { 'clip-path': 'url(#plot-clip)' });
  data.workers.forEach((name, w) => {
    svgEl(svg, 'text', { x: 6, y: workerY(w) + 19, class: 'lane-label' }, { text: name });
    svgEl(plot, 'rect', {
      x: left,
      y: workerY(w),
      width: right - left,
      height: WORKER_PX,
      class: `lane worker-lane ${w % 2 ? 'odd' : 'even'}`,
      'data-worker': name,
    });
  });
  const { ticks, step } = niceTicks(view.fromMs, view.toMs, Math.max(2, (right - left) / 110));
  for (const t of ticks) {
    svgEl(plot, 'line', { x1: x(t), x2: x(t), y1: top, y2: bottom, class: 'grid' });
    const attrs = { x: x(t), y: bottom + 18, class: x(t) > right - 30 ? 'tick end' : 'tick' };
    svgEl(svg, 'text', attrs, { text: formatSeconds(t, step) });
  }

  // One way for the whole window: single bars when a typical holding is wide enough to see.
  const visible = data.holdings.filter((h) => inView(h.fromMs, h.toMs));
  const lengths = visible.map((h) => h.toMs - h.fromMs).sort((a, b) => a - b);
  const typicalMs = lengths[Math.floor(lengths.length / 2)] ?? 0;
  if (typicalMs * x.pxPerMs >= MIN_HOLDING_PX) {
    drawHoldings(plot, data, visible, layout);
    if (visible.length <= MAX_HANDOFFS) drawHandOffs(plot, data, layout);
  } else {
    drawDensity(plot, visible, x, left, right, (w) => workerY(w) + 5, WORKER_PX - 10);
  }
  drawOverlaps(plot, data, layout);
  drawFenceInversions(plot, data, layout);
  drawNodeLanes(svg, plot, data, { ...layout, top: nodesTop, laneHeight: NODE_PX });
  drawFaults(svg, faults, faultRows, { ...layout, rowHeight: FAULT_ROW_PX });
  return { x, left, right };
}

/** One bar per holding, with its fence inside when it fits and the details in a tooltip. */
function drawHoldings(parent, data, holdings, { x, workerY, laneHeight }) {
  const overlapping = new Set(data.overlaps.flatMap((o) => [key(o.first), key(o.second)]));
  for (const h of holdings) {
    const width = Math.max(1, (h.toMs - h.fromMs) * x.pxPerMs);
    const when = `${formatSeconds(h.fromMs, 0.01)} to ${formatSeconds(h.toMs, 0.01)}`;
    svgEl(
      parent,
      'rect',
      {
        x: x(h.fromMs),
        y: workerY(h.worker) + 5,
        width,
        height: laneHeight - 10,
        class: overlapping.has(key(h)) ? 'holding overlapping' : 'holding',
      },
      {
        title: `${data.workers[h.worker]}, fence ${h.fence || '-'}: held ${formatDuration(h.toMs - h.fromMs)} (${when})`,
      },
    );
    const text = fitLabel(width, `fence ${h.fence}`, h.fence);
    if (h.fence && text) {
      const attrs = { x: x(h.fromMs) + 4, y: workerY(h.worker) + 19, class: 'fence-label' };
      svgEl(parent, 'text', attrs, { text });
    }
  }
}

/** A holding's identity across the data's lists. */
function key(h) {
  return `${h.worker}@${h.fromMs}`;
}

/** Connects each release to the next acquisition, with the gap's length where it fits. */
function drawHandOffs(parent, { holdings }, { x, inView, workerY, laneHeight }) {
  const mid = (w) => workerY(w) + laneHeight / 2;
  for (let i = 1; i < holdings.length; i++) {
    const [prev, next] = [holdings[i - 1], holdings[i]];
    const gap = next.fromMs - prev.toMs;
    if (gap < 0 || !inView(prev.toMs, next.fromMs)) continue;
    const [x1, y1, x2, y2] = [x(prev.toMs), mid(prev.worker), x(next.fromMs), mid(next.worker)];
    const title = `hand-off: the lock was free for ${formatDuration(gap)}`;
    svgEl(parent, 'line', { x1, y1, x2, y2, class: 'handoff' }, { title });
    const text = fitLabel(x2 - x1, `${gap.toFixed(1)} ms`);
    if (text) {
      const attrs = { x: (x1 + x2) / 2, y: (y1 + y2) / 2 + 4, class: 'handoff-label' };
      svgEl(parent, 'text', attrs, { text });
    }
  }
}
