// Shading for holdings too short to draw one by one, and label placement: shared by the lanes
// and the overview strip.
import { svgEl } from './svg.js';

/** Pixels per shaded bucket: wide enough to show a share of time rather than a barcode. */
const BUCKET_PX = 4;

/**
 * Shades a lane per bucket of a few pixels by the share of that time the worker held the lock
 * (10 levels); `laneY(worker)` is the top of the worker's shading, `height` its height.
 */
export function drawDensity(parent, holdings, x, left, right, laneY, height) {
  const buckets = Math.ceil((right - left) / BUCKET_PX);
  const busy = new Map();
  for (const h of holdings) {
    const lane = busy.get(h.worker) ?? new Float64Array(buckets);
    busy.set(h.worker, lane);
    const [from, to] = [(x(h.fromMs) - left) / BUCKET_PX, (x(h.toMs) - left) / BUCKET_PX];
    for (let b = Math.max(0, Math.floor(from)); b < Math.min(buckets, Math.ceil(to)); b++) {
      lane[b] += Math.min(to, b + 1) - Math.max(from, b); // the share of bucket b held
    }
  }
  for (const [worker, lane] of busy) {
    const level = (b) => (b < buckets ? Math.min(10, Math.round((lane[b] ?? 0) * 10)) : -1);
    let start = 0;
    for (let b = 1; b <= buckets; b++) {
      if (level(b) === level(start)) continue;
      if (level(start) > 0) {
        const share = `${level(start) * 10}%`;
        svgEl(
          parent,
          'rect',
          {
            x: left + start * BUCKET_PX,
            y: laneY(worker),
            width: Math.min(right, left + b * BUCKET_PX) - (left + start * BUCKET_PX),
            height,
            class: 'holding-density',
            'fill-opacity': 0.12 + (0.88 * level(start)) / 10,
          },
          { title: `held about ${share} of the time here: zoom in to see single holdings` },
        );
      }
      start = b;
    }
  }
}

/** A row for each label starting at `xs` (px), so that labels `width` px wide do not overlap. */
export function placeLabels(xs, width) {
  const rowEnds = [];
  return xs.map((px) => {
    let row = rowEnds.findIndex((end) => end < px);
    if (row === -1) row = rowEnds.length;
    rowEnds[row] = px + width;
    return row;
  });
}

/** `text` if it fits in `px` at about 6 px per character, else `short` if that fits, else ''. */
export function fitLabel(px, text, short = '') {
  if (text.length * 6 + 10 <= px) return text;
  return short.length * 6 + 10 <= px ? short : '';
}
