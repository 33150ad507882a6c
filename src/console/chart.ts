/**
 * Inline SVG charts drawn on the server: a line (lag over the day) and bars
 * (requests per hour). Each has a title and description for screen readers;
 * the figures themselves are also in a table below the chart.
 */
import { html, type SafeHtml } from './html.js';

const W = 720;
const H = 180;
const PAD = { left: 48, right: 28, top: 22, bottom: 28 };

export interface Point {
  at: Date;
  value: number;
}

const niceMax = (v: number): number => {
  if (v <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(v));
  return Math.ceil(v / step) * step;
};

function frame(id: string, title: string, desc: string, from: Date, to: Date, max: number, unit: string, body: SafeHtml): SafeHtml {
  const x0 = PAD.left;
  const y0 = H - PAD.bottom;
  const hours = [0, 6, 12, 18, 24].map((h) => new Date(from.getTime() + ((to.getTime() - from.getTime()) * h) / 24));
  const xOf = (d: Date) => x0 + ((d.getTime() - from.getTime()) / (to.getTime() - from.getTime())) * (W - PAD.left - PAD.right);
  return html`<svg
    role="img"
    aria-labelledby="${id}-t ${id}-d"
    viewBox="0 0 ${W} ${H}"
    width="100%"
    class="chart"
    xmlns="http://www.w3.org/2000/svg"
  >
    <title id="${id}-t">${title}</title>
    <desc id="${id}-d">${desc}</desc>
    <line x1="${x0}" y1="${y0}" x2="${W - PAD.right}" y2="${y0}" stroke="#888" />
    <line x1="${x0}" y1="${PAD.top}" x2="${x0}" y2="${y0}" stroke="#888" />
    <text x="${x0 - 6}" y="${PAD.top + 8}" text-anchor="end">${max}</text>
    <text x="${x0 - 6}" y="${y0}" text-anchor="end">0</text>
    <text x="${x0}" y="${PAD.top - 8}" text-anchor="middle">${unit}</text>
    ${hours.map((d) => html`<text x="${xOf(d).toFixed(1)}" y="${H - 8}" text-anchor="middle">${d.toISOString().slice(11, 16)}</text>`)}
    ${body}
  </svg>`;
}

/** A step line of `points` between `from` and `to` (values in `unit`). */
export function lineChart(id: string, title: string, desc: string, points: readonly Point[], from: Date, to: Date, unit: string): SafeHtml {
  const max = niceMax(Math.max(0, ...points.map((p) => p.value)));
  const xOf = (d: Date) => PAD.left + ((d.getTime() - from.getTime()) / (to.getTime() - from.getTime())) * (W - PAD.left - PAD.right);
  const yOf = (v: number) => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom);
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${xOf(p.at).toFixed(1)},${yOf(p.value).toFixed(1)}`).join(' ');
  const body = points.length ? html`<path d="${path}" fill="none" stroke="#0b4fa8" stroke-width="2" />` : html``;
  return frame(id, title, desc, from, to, max, unit, body);
}

/** One bar per point (each an hour starting at `at`). */
export function barChart(id: string, title: string, desc: string, points: readonly Point[], from: Date, to: Date, unit: string): SafeHtml {
  const max = niceMax(Math.max(0, ...points.map((p) => p.value)));
  const span = to.getTime() - from.getTime();
  const width = (3600_000 / span) * (W - PAD.left - PAD.right) * 0.8;
  const xOf = (d: Date) => PAD.left + ((d.getTime() - from.getTime()) / span) * (W - PAD.left - PAD.right);
  const hOf = (v: number) => (v / max) * (H - PAD.top - PAD.bottom);
  const bars = points
    .filter((p) => p.value > 0)
    .map(
      (p) =>
        html`<rect
          x="${xOf(p.at).toFixed(1)}"
          y="${(H - PAD.bottom - hOf(p.value)).toFixed(1)}"
          width="${width.toFixed(1)}"
          height="${hOf(p.value).toFixed(1)}"
          fill="#2f6f3e"
          ><title>${p.at.toISOString().slice(11, 16)}: ${p.value}</title></rect
        >`,
    );
  return frame(id, title, desc, from, to, max, unit, html`${bars}`);
}
