// SVG building blocks and time formatting for the report page (plain DOM, no libraries).

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Appends an SVG element `name` with `attrs` (and a text child or a <title> tooltip). */
export function svgEl(parent, name, attrs = {}, options = {}) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (options.text !== undefined) node.textContent = options.text;
  if (options.title !== undefined) {
    const title = document.createElementNS(SVG_NS, 'title');
    title.textContent = options.title;
    node.appendChild(title);
  }
  parent.appendChild(node);
  return node;
}

/** Empties `svg` and sets its size in px. */
export function resetSvg(svg, width, height) {
  svg.replaceChildren();
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
}

/** A linear scale from ms in [fromMs, toMs] to px in [left, right]. */
export function timeScale(fromMs, toMs, left, right) {
  const pxPerMs = (right - left) / (toMs - fromMs);
  const x = (ms) => left + (ms - fromMs) * pxPerMs;
  x.pxPerMs = pxPerMs;
  x.msAt = (px) => fromMs + (px - left) / pxPerMs;
  return x;
}

/** Round tick positions (1, 2 or 5 times a power of ten) for about `count` ticks. */
export function niceTicks(from, to, count) {
  const rough = (to - from) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const ticks = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return { ticks, step };
}

/** A time from the start as seconds, with as many decimals as `stepMs` needs. */
export function formatSeconds(ms, stepMs) {
  const decimals = Math.max(0, Math.min(4, -Math.floor(Math.log10(stepMs / 1000) + 1e-9)));
  return `${(ms / 1000).toFixed(decimals)} s`;
}

/** A duration: "3.20 ms" below a second, "1.234 s" above. */
export function formatDuration(ms) {
  return ms < 1000 ? `${ms.toFixed(2)} ms` : `${(ms / 1000).toFixed(3)} s`;
}
