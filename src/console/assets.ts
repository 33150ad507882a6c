/**
 * The console's stylesheet and its one small script, served from
 * /assets/ (no build step). Every page reads fine without the script: it only
 * offers to reload the overview every 30 seconds.
 */
export const CSS = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #4a5563; --line: #c9d1da; --bg: #ffffff; --band: #f3f5f8;
  --ok-fg: #0b5a28; --ok-bg: #e3f4e8; --bad-fg: #8b1a1a; --bad-bg: #fde8e8; --link: #0b4fa8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: baseline; padding: .75rem 1.25rem; background: #14213d; color: #fff; flex-wrap: wrap; }
header .brand { font-weight: 700; font-size: 1.1rem; color: #fff; text-decoration: none; }
header nav a { color: #fff; margin-right: 1rem; text-decoration: underline; text-underline-offset: 3px; }
header nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
main { padding: 1rem 1.25rem 3rem; max-width: 1500px; }
h1 { font-size: 1.4rem; margin: .25rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.75rem 0 .5rem; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, summary:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
.scroll { overflow-x: auto; }
.scroll:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
td { overflow-wrap: anywhere; }
td pre.error { max-width: 40ch; }
th a { color: inherit; }
form.filter { display: flex; gap: 1rem; align-items: end; flex-wrap: wrap; margin: 0 0 1rem; }
form.filter label { display: flex; flex-direction: column; font-size: .9rem; color: var(--muted); }
form.filter input, form.filter select { font: inherit; padding: .3rem .5rem; border: 1px solid var(--muted); border-radius: .3rem; }
table { border-collapse: collapse; width: 100%; margin: .25rem 0 1rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; color: var(--muted); }
th, td { text-align: left; vertical-align: top; padding: .4rem .6rem; border-bottom: 1px solid var(--line); }
th { background: var(--band); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 1rem; font-weight: 700; border: 1px solid currentColor; white-space: nowrap; }
.healthy { color: var(--ok-fg); background: var(--ok-bg); }
.degraded { color: var(--bad-fg); background: var(--bad-bg); }
.why { display: block; color: var(--bad-fg); font-size: .85rem; }
.title { display: block; color: var(--muted); font-size: .85rem; }
.muted, .empty { color: var(--muted); }
.summary { display: flex; gap: 1rem; flex-wrap: wrap; margin-bottom: 1rem; }
.summary div { background: var(--band); padding: .5rem .9rem; border-radius: .4rem; }
.summary strong { font-size: 1.3rem; display: block; }
.pager { margin: .5rem 0 1rem; display: flex; gap: 1rem; }
pre.error { white-space: pre-wrap; margin: 0; color: var(--bad-fg); font-size: .85rem; max-width: 60ch; }
form.keep { display: inline-block; margin-right: .75rem; }
button { font: inherit; padding: .45rem .9rem; border-radius: .35rem; border: 2px solid #14213d; background: #14213d; color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #14213d; }
.notice { padding: .6rem .9rem; border-left: 5px solid var(--link); background: var(--band); margin: .5rem 0 1rem; }
.notice.bad { border-color: var(--bad-fg); background: var(--bad-bg); }
figure { margin: .5rem 0 1rem; }
figcaption { color: var(--muted); font-size: .9rem; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.changed { background: #fff6d6; }
svg.chart { max-width: 720px; height: auto; }
.skip { position: absolute; left: -9999px; top: .5rem; }
.skip:focus { left: 1rem; z-index: 1; background: #fff; color: var(--link); padding: .4rem .8rem; border: 2px solid var(--link); }
main:focus { outline: none; }
`;

export const SCRIPT = `
(function () {
  var box = document.querySelector('[data-refresh]');
  if (!box) return;
  var label = document.createElement('label');
  var input = document.createElement('input');
  input.type = 'checkbox';
  input.checked = sessionStorage.getItem('listsync-refresh') === '1';
  label.appendChild(input);
  label.appendChild(document.createTextNode(' reload every 30 s'));
  box.appendChild(label);
  var timer;
  function arm() {
    clearTimeout(timer);
    if (input.checked) timer = setTimeout(function () { location.reload(); }, 30000);
  }
  input.addEventListener('change', function () {
    sessionStorage.setItem('listsync-refresh', input.checked ? '1' : '0');
    arm();
  });
  arm();
})();
`;
