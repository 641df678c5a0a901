// Reads the embedded data, draws everything at the page's width, and wires zoom and pan: the
// window shown is `view` = { fromMs, toMs } (ms from the demo's start), kept in the URL hash.
import { drawHistogram } from './histogram.js';
import { drawLanes } from './lanes.js';
import { drawOverview } from './overview.js';
import { formatDuration, formatSeconds } from './svg.js';

const data = JSON.parse(document.getElementById('report-data').textContent);
const MIN_WINDOW_MS = 2;
const overviewSvg = document.getElementById('overview');
const lanesSvg = document.getElementById('lanes');
const histogramSvg = document.getElementById('histogram');
let view = clampView(viewFromHash() ?? { fromMs: 0, toMs: data.spanMs });
let overview; // the scales of the last drawing, for the pointer handlers
let lanes;

function clampView({ fromMs, toMs }) {
  const length = Math.min(data.spanMs, Math.max(MIN_WINDOW_MS, toMs - fromMs));
  const from = Math.min(Math.max(0, fromMs), data.spanMs - length);
  return { fromMs: from, toMs: from + length };
}

function viewFromHash() {
  const match = /from=([\d.]+)&to=([\d.]+)/.exec(location.hash);
  return match ? { fromMs: Number(match[1]), toMs: Number(match[2]) } : undefined;
}

function setView(next) {
  view = clampView(next);
  const whole = view.fromMs === 0 && view.toMs === data.spanMs;
  const hash = `#from=${view.fromMs.toFixed(3)}&to=${view.toMs.toFixed(3)}`;
  history.replaceState(null, '', whole ? location.pathname : hash);
  drawTimeline();
}

function zoomAround(centerMs, factor) {
  const from = centerMs - (centerMs - view.fromMs) * factor;
  setView({ fromMs: from, toMs: from + (view.toMs - view.fromMs) * factor });
}

function drawTimeline() {
  const width = lanesSvg.parentElement.clientWidth;
  overview = drawOverview(overviewSvg, data, view, width);
  lanes = drawLanes(lanesSvg, data, view, width);
  const length = view.toMs - view.fromMs;
  document.getElementById('window-label').textContent =
    `showing ${formatSeconds(view.fromMs, length / 10)} to ${formatSeconds(view.toMs, length / 10)} (${formatDuration(length)})`;
}

function drawAll() {
  drawTimeline();
  drawHistogram(histogramSvg, data.handOff, histogramSvg.parentElement.clientWidth);
}

/** Pointer position in `svg` as ms on the scale `x`. */
function msAt(svg, scale, event) {
  return scale.x.msAt(event.clientX - svg.getBoundingClientRect().left);
}

function listViolations() {
  const list = document.getElementById('violations');
  const item = (text, around) => {
    const li = document.createElement('li');
    li.className = 'violation';
    li.textContent = `${text} `;
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'show';
    button.addEventListener('click', () => setView({ fromMs: around - 25, toMs: around + 25 }));
    li.appendChild(button);
    list.appendChild(li);
  };
  const who = (h) => `${data.workers[h.worker]} (fence ${h.fence || '-'})`;
  for (const o of data.overlaps.slice(0, 100)) {
    const length = Math.min(o.first.toMs, o.second.toMs) - o.second.fromMs;
    item(
      `Overlap at ${formatSeconds(o.second.fromMs, 1)}: ${who(o.first)} and ${who(o.second)} held the lock together for ${formatDuration(length)}.`,
      o.second.fromMs,
    );
  }
  for (const f of data.fenceInversions.slice(0, 100)) {
    item(
      `Write with fence ${f.later.fence} by ${data.workers[f.later.worker]} applied at ${formatSeconds(f.later.atMs, 1)}, after one with fence ${f.earlier.fence}.`,
      f.later.atMs,
    );
  }
  for (const lost of data.lostWrites) {
    const li = document.createElement('li');
    li.className = 'violation';
    li.textContent = `Lost writes on ${lost.resource}: ${lost.expected} applied, final value ${lost.final}.`;
    list.appendChild(li);
  }
  if (list.children.length === 0) {
    const li = document.createElement('li');
    li.className = 'none';
    li.textContent =
      'None: 0 overlapping holdings, 0 writes out of fence order, 0 lost writes (the red marks of the timeline would show them).';
    list.appendChild(li);
  }
}

document.querySelector('.controls').addEventListener('click', (event) => {
  const { zoom, pan } = event.target.dataset ?? {};
  const middle = (view.fromMs + view.toMs) / 2;
  if (zoom === 'in') zoomAround(middle, 0.5);
  else if (zoom === 'out') zoomAround(middle, 2);
  else if (zoom === 'reset') setView({ fromMs: 0, toMs: data.spanMs });
  else if (zoom) setView({ fromMs: middle - Number(zoom) / 2, toMs: middle + Number(zoom) / 2 });
  else if (pan) {
    const shift = (Number(pan) * (view.toMs - view.fromMs)) / 2;
    setView({ fromMs: view.fromMs + shift, toMs: view.toMs + shift });
  }
});

// Overview: drag across it to choose a window, drag the brush to move it, click to centre it.
let brushing;
overviewSvg.addEventListener('pointerdown', (event) => {
  const at = msAt(overviewSvg, overview, event);
  const inside = at >= view.fromMs && at <= view.toMs && view.toMs - view.fromMs < data.spanMs;
  brushing = {
    startX: event.clientX,
    at,
    moving: inside,
    offset: at - view.fromMs,
    dragged: false,
  };
  overviewSvg.setPointerCapture(event.pointerId);
});
overviewSvg.addEventListener('pointermove', (event) => {
  if (!brushing) return;
  const at = msAt(overviewSvg, overview, event);
  brushing.dragged ||= Math.abs(event.clientX - brushing.startX) > 3;
  if (!brushing.dragged) return;
  const length = view.toMs - view.fromMs;
  if (brushing.moving)
    setView({ fromMs: at - brushing.offset, toMs: at - brushing.offset + length });
  else setView({ fromMs: Math.min(at, brushing.at), toMs: Math.max(at, brushing.at) });
});
overviewSvg.addEventListener('pointerup', () => {
  const length = view.toMs - view.fromMs;
  if (brushing && !brushing.dragged && !brushing.moving) {
    setView({ fromMs: brushing.at - length / 2, toMs: brushing.at + length / 2 });
  }
  brushing = undefined;
});

// Lanes: the wheel zooms around the pointer, dragging pans.
lanesSvg.addEventListener(
  'wheel',
  (event) => {
    event.preventDefault();
    zoomAround(msAt(lanesSvg, lanes, event), event.deltaY > 0 ? 1.25 : 0.8);
  },
  { passive: false },
);
let panning;
lanesSvg.addEventListener('pointerdown', (event) => {
  panning = { startX: event.clientX, view, pxPerMs: lanes.x.pxPerMs };
  lanesSvg.setPointerCapture(event.pointerId);
});
lanesSvg.addEventListener('pointermove', (event) => {
  if (!panning) return;
  const shift = (panning.startX - event.clientX) / panning.pxPerMs;
  setView({ fromMs: panning.view.fromMs + shift, toMs: panning.view.toMs + shift });
});
lanesSvg.addEventListener('pointerup', () => {
  panning = undefined;
});

// Browsers fire resize at most once per frame already; redrawing at once (not in a later
// frame) also leaves the page drawn at its new width for whoever reads it next.
window.addEventListener('resize', drawAll);
listViolations();
drawAll();
