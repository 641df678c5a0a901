// What the detailed timeline draws over and under the holdings: the violations (red), one lane
// per Redis node with its up / paused / killed intervals, and the injected faults.
import { fitLabel } from './density.js';
import { formatDuration, formatSeconds, svgEl } from './svg.js';

/** Each overlap: a red band across the lanes of both holders, for as long as both held it. */
export function drawOverlaps(parent, data, { x, inView, workerY, laneHeight }) {
  for (const o of data.overlaps) {
    const from = o.second.fromMs;
    const to = Math.min(o.first.toMs, o.second.toMs);
    if (!inView(from, to)) continue;
    const [a, b] = [o.first.worker, o.second.worker].sort((p, q) => p - q);
    const who = (h) => `${data.workers[h.worker]} (fence ${h.fence || '-'})`;
    svgEl(
      parent,
      'rect',
      {
        x: x(from) - 1,
        y: workerY(a) + 1,
        width: Math.max(3, (to - from) * x.pxPerMs + 2),
        height: workerY(b) + laneHeight - workerY(a) - 2,
        class: 'overlap',
      },
      {
        title: `overlap: ${who(o.first)} and ${who(o.second)} both held the lock for ${formatDuration(to - from)}`,
      },
    );
  }
}

/** Each write applied after one with a higher fence: a red diamond on its writer's lane. */
export function drawFenceInversions(parent, data, { x, inView, workerY, laneHeight }) {
  for (const { earlier, later } of data.fenceInversions) {
    if (!inView(later.atMs, later.atMs)) continue;
    const [cx, cy] = [x(later.atMs), workerY(later.worker) + laneHeight / 2];
    svgEl(
      parent,
      'path',
      { d: `M${cx} ${cy - 8}l8 8l-8 8l-8 -8z`, class: 'fence-inversion' },
      {
        title: `${data.workers[later.worker]} wrote with fence ${later.fence} after a write with fence ${earlier.fence}`,
      },
    );
  }
}

/** One lane per node: a bar per interval, coloured by state, labelled where it fits. */
export function drawNodeLanes(svg, plot, data, { x, left, right, inView, top, laneHeight }) {
  data.nodes.forEach((node, n) => {
    const y = top + n * laneHeight;
    svgEl(svg, 'text', { x: 6, y: y + 15, class: 'lane-label' }, { text: node.name });
    const lane = svgEl(plot, 'g', { class: 'node-lane', 'data-node': node.name });
    for (const s of node.segments.filter((seg) => inView(seg.fromMs, seg.toMs))) {
      const [x1, x2] = [Math.max(left, x(s.fromMs)), Math.min(right, x(s.toMs))];
      const when = `${formatSeconds(s.fromMs, 1)} to ${formatSeconds(s.toMs, 1)}`;
      svgEl(
        lane,
        'rect',
        {
          x: x1,
          y: y + 3,
          width: Math.max(1, x2 - x1),
          height: laneHeight - 6,
          class: `node-state state-${s.state}`,
          'data-state': s.state,
        },
        { title: `${node.name}: ${s.state} from ${when}` },
      );
      const text = fitLabel(x2 - x1, s.state === 'up' ? 'up' : `${s.state}, ${when}`, s.state);
      if (text) {
        svgEl(lane, 'text', { x: x1 + 5, y: y + 15, class: `state-label ${s.state}` }, { text });
      }
    }
  });
}

/** A dashed line per fault across every lane, its label in the row chosen for it. */
export function drawFaults(svg, faults, rows, { x, right, top, bottom, rowHeight }) {
  faults.forEach((fault, i) => {
    const fx = x(fault.atMs);
    svgEl(svg, 'line', { x1: fx, x2: fx, y1: top - 2, y2: bottom, class: 'fault' });
    const y = 8 + (rows[i] ?? 0) * rowHeight + 10;
    // Near the right edge the label goes to the left of its line.
    const [lx, anchor] = fx + 150 > right ? [fx - 3, 'end'] : [fx + 3, 'start'];
    const attrs = { x: lx, y, class: 'fault-label', 'text-anchor': anchor };
    svgEl(svg, 'text', attrs, { text: fault.label });
  });
}
