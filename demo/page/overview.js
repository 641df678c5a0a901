// The overview strip: the whole run in a few pixels per lane, the faults, every violation as a
// red tick, and the brush: the window that the detailed lanes show.
import { drawDensity } from './density.js';
import { LABEL_PX, RIGHT_PX } from './lanes.js';
import { formatSeconds, niceTicks, resetSvg, svgEl, timeScale } from './svg.js';

const WORKER_PX = 7;
const NODE_PX = 4;

/** Draws the whole run `width` px wide with the brush on `view`; returns the time scale. */
export function drawOverview(svg, data, view, width) {
  const left = LABEL_PX;
  const right = Math.max(left + 50, width - RIGHT_PX);
  const x = timeScale(0, data.spanMs, left, right);
  const top = 4;
  const nodesTop = top + data.workers.length * WORKER_PX + 4;
  const bottom = nodesTop + data.nodes.length * NODE_PX;
  resetSvg(svg, width, bottom + 18);

  svgEl(svg, 'rect', {
    x: left,
    y: top,
    width: right - left,
    height: bottom - top,
    class: 'overview-bg',
  });
  svgEl(svg, 'text', { x: 6, y: top + 14, class: 'lane-label' }, { text: 'whole run' });
  svgEl(svg, 'text', { x: 6, y: top + 27, class: 'lane-hint' }, { text: 'drag to zoom' });
  drawDensity(svg, data.holdings, x, left, right, (w) => top + w * WORKER_PX, WORKER_PX - 1);
  data.nodes.forEach((node, n) => {
    for (const s of node.segments) {
      if (s.state === 'up') continue; // only the faults stand out in the strip
      svgEl(svg, 'rect', {
        x: x(s.fromMs),
        y: nodesTop + n * NODE_PX,
        width: Math.max(1, x(s.toMs) - x(s.fromMs)),
        height: NODE_PX - 1,
        class: `node-state state-${s.state}`,
      });
    }
  });
  for (const f of data.faults) {
    svgEl(svg, 'line', { x1: x(f.atMs), x2: x(f.atMs), y1: top, y2: bottom, class: 'fault' });
  }
  const marks = [
    ...data.overlaps.map((o) => o.second.fromMs),
    ...data.fenceInversions.map((f) => f.later.atMs),
  ];
  for (const at of marks) {
    svgEl(svg, 'rect', {
      x: x(at) - 1,
      y: top,
      width: 2,
      height: bottom - top,
      class: 'overlap-tick',
    });
  }
  const { ticks, step } = niceTicks(0, data.spanMs, Math.max(2, (right - left) / 90));
  for (const t of ticks) {
    svgEl(
      svg,
      'text',
      { x: x(t), y: bottom + 13, class: 'tick' },
      { text: formatSeconds(t, step) },
    );
  }

  const [b1, b2] = [x(view.fromMs), Math.max(x(view.fromMs) + 3, x(view.toMs))];
  svgEl(svg, 'rect', {
    x: left,
    y: top,
    width: b1 - left,
    height: bottom - top,
    class: 'brush-outside',
  });
  svgEl(svg, 'rect', {
    x: b2,
    y: top,
    width: Math.max(0, right - b2),
    height: bottom - top,
    class: 'brush-outside',
  });
  svgEl(svg, 'rect', {
    x: b1,
    y: top - 2,
    width: b2 - b1,
    height: bottom - top + 4,
    class: 'brush',
  });
  return { x, left, right };
}
