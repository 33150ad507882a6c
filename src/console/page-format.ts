/** Durations and instants as the console writes them: "4 min", "2 h 5 min", ISO times in a <time> element. */
import { html, type SafeHtml } from './html.js';

/** "42 s", "4 min", "2 h 5 min", "3 d 4 h". */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** A <time> element: "4 min ago" with the exact instant in its title and datetime. */
export function ago(at: Date | null | undefined, now: Date): SafeHtml | string {
  if (!at) return '—';
  const iso = at.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${duration((now.getTime() - at.getTime()) / 1000)} ago</time>`;
}

/** A <time> element for an instant to come: "in 4 min". */
export function fromNow(at: Date | null | undefined, now: Date): SafeHtml | string {
  if (!at) return '—';
  const iso = at.toISOString();
  return html`<time datetime="${iso}" title="${iso}">in ${duration((at.getTime() - now.getTime()) / 1000)}</time>`;
}

/** A value of an item as text: empty as "(empty)", objects as JSON. */
export function itemValue(v: unknown): string {
  if (v === null || v === undefined || v === '') return '(empty)';
  return typeof v === 'string' ? v : JSON.stringify(v);
}
