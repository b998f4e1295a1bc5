// joseki work page: the coordinator's history (GET /v1/work/history, public:
// aggregate figures only) drawn as SVG charts, the book's line from the root
// and how it changed, and with a token the live status (GET
// /v1/work/status: workers, set-aside positions, tokens and their spot checks). No library, nothing fetched
// from elsewhere. The token stays in this tab (sessionStorage).
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
const state = { hours: 24, points: [], now: 0, t0: 0, token: sessionStorage.getItem('joseki-token') || '' };

function el(name, attrs, text) {
  const e = document.createElementNS(SVGNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function h(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function fmt(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  const a = Math.abs(n);
  // 12k, not 12.0k: an axis's round ticks read round.
  const unit = (v, u, d) => v.toFixed(d).replace(/\.0$/, '') + u;
  if (a >= 1e9) return unit(n / 1e9, 'G', a >= 1e10 ? 0 : 1);
  if (a >= 1e6) return unit(n / 1e6, 'M', a >= 1e7 ? 0 : 1);
  if (a >= 1e4) return unit(n / 1e3, 'k', a >= 1e5 ? 0 : 1);
  if (a >= 100 || Number.isInteger(n)) return String(Math.round(n));
  return String(+n.toFixed(a >= 10 ? 1 : 2));
}

function clock(t, range) {
  const d = new Date(t * 1000), p = n => String(n).padStart(2, '0');
  const hm = p(d.getHours()) + ':' + p(d.getMinutes()) + (range && range < 600 ? ':' + p(d.getSeconds()) : '');
  return range > 2 * 86400 ? (d.getMonth() + 1) + '-' + p(d.getDate()) + (range > 20 * 86400 ? '' : ' ' + hm) : hm;
}

function ago(s) {
  if (s < 90) return Math.round(s) + ' s ago';
  if (s < 5400) return Math.round(s / 60) + ' min ago';
  if (s < 2 * 86400) return (s / 3600).toFixed(1) + ' h ago';
  return (s / 86400).toFixed(1) + ' days ago';
}

// The step of each tier in the data: the smallest gap between two of its
// points (a gap of more than twice its step breaks a chart's line).
function steps(points) {
  const st = {}, last = {};
  for (const p of points) {
    if (last[p.tier] !== undefined) {
      const d = p.t - last[p.tier];
      if (d > 0 && (st[p.tier] === undefined || d < st[p.tier])) st[p.tier] = d;
    }
    last[p.tier] = p.t;
  }
  return st;
}

// An axis from lo to hi in round steps (1, 2 or 5 times a power of ten,
// whole numbers for counts), about four of them: {lo, hi, ticks}.
function niceAxis(lo, hi, integer) {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / 4, p = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw * 0.999);
  if (integer) step = Math.max(1, Math.ceil(step));
  lo = Math.floor(lo / step + 1e-9) * step;
  hi = Math.ceil(hi / step - 1e-9) * step;
  if (hi <= lo) hi = lo + step;
  const ticks = [];
  for (let k = 0; lo + k * step <= hi + step / 2; k++) ticks.push(+(lo + k * step).toPrecision(12));
  return { lo, hi, ticks };
}

// One chart: series [{get: point -> value or null, cls, right, integer}] over
// state.points between t0 and t1. Lines break at gaps (the coordinator was
// down). Each axis has round ticks, whole numbers for a series of counts. The
// svg gets data-points (the points drawn), data-ticks and data-ticks-right
// (the ticks' values).
function chart(id, series, opts = {}) {
  const svg = document.getElementById(id);
  svg.textContent = '';
  const W = 560, H = 200, L = 52, R = series.some(s => s.right) ? 40 : 12, T = 10, B = 24;
  const pw = W - L - R, ph = H - T - B;
  const pts = state.points, t1 = state.now, t0 = state.t0;
  const x = t => L + (t - t0) / Math.max(1, t1 - t0) * pw;
  const axes = [false, true].map(right => {
    let lo = Infinity, hi = -Infinity;
    for (const s of series) if (!!s.right === right) for (const p of pts) {
      const v = s.get(p);
      if (v === null || v === undefined) continue;
      lo = Math.min(lo, v); hi = Math.max(hi, v);
    }
    if (lo === Infinity) { lo = 0; hi = 1; }
    if (opts.zero !== false || lo > 0) lo = Math.min(lo, 0);
    if (opts.symmetric) { const m = Math.max(Math.abs(lo), Math.abs(hi), 50); lo = -m; hi = m; }
    const integer = series.filter(s => !!s.right === right).every(s => s.integer);
    const a = niceAxis(lo, hi, integer);
    return { lo: a.lo, hi: a.hi, ticks: a.ticks, y: v => T + ph - (v - a.lo) / (a.hi - a.lo) * ph };
  });
  svg.appendChild(el('rect', { x: L, y: T, width: pw, height: ph, class: 'plot' }));
  for (const v of axes[0].ticks) {
    const y = axes[0].y(v);
    svg.appendChild(el('line', { x1: L, x2: L + pw, y1: y, y2: y, class: 'grid' }));
    svg.appendChild(el('text', { x: L - 6, y: y + 4, 'text-anchor': 'end', class: 'tick' }, fmt(v)));
  }
  svg.dataset.ticks = axes[0].ticks.join(' ');
  if (R > 12) {
    for (const v of axes[1].ticks)
      svg.appendChild(el('text', { x: L + pw + 6, y: axes[1].y(v) + 4, class: 'tick' }, fmt(v)));
    svg.dataset.ticksRight = axes[1].ticks.join(' ');
  }
  if (opts.symmetric) {
    const y = axes[0].y(0);
    svg.appendChild(el('line', { x1: L, x2: L + pw, y1: y, y2: y, class: 'zero' }));
  }
  for (let i = 0; i <= 4; i++) {
    const t = t0 + (t1 - t0) * i / 4;
    svg.appendChild(el('text', { x: x(t), y: H - 6, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle', class: 'tick' }, clock(t, t1 - t0)));
  }
  const st = steps(pts);
  let drawn = 0;
  series.forEach((s, k) => {
    const a = axes[s.right ? 1 : 0];
    let seg = [], prev = null, lastXY = null;
    const flush = () => {
      if (seg.length > 1) svg.appendChild(el('polyline', { points: seg.join(' '), class: 'line s' + k }));
      else if (seg.length === 1) { const [cx, cy] = seg[0].split(','); svg.appendChild(el('circle', { cx, cy, r: 2, class: 'dot s' + k })); }
      seg = [];
    };
    for (const p of pts) {
      const v = s.get(p);
      if (p.t < t0 || v === null || v === undefined) { flush(); prev = null; continue; }
      const gap = prev && p.t - prev.t > 2.5 * (st[p.tier] || 60);
      if (gap) flush();
      const xy = x(p.t).toFixed(1) + ',' + a.y(v).toFixed(1);
      seg.push(xy);
      lastXY = xy;
      prev = p;
      drawn++;
    }
    flush();
    if (lastXY) { const [cx, cy] = lastXY.split(','); svg.appendChild(el('circle', { cx, cy, r: 3, class: 'last s' + k })); }
  });
  svg.dataset.points = drawn;
  if (!drawn) svg.appendChild(el('text', { x: L + pw / 2, y: T + ph / 2, 'text-anchor': 'middle', class: 'empty' }, 'no points in this range'));
  // The point under the pointer, read out.
  const read = el('text', { x: L + 6, y: T + 14, class: 'readout' });
  const cursor = el('line', { x1: 0, x2: 0, y1: T, y2: T + ph, class: 'cursor', visibility: 'hidden' });
  svg.appendChild(cursor);
  svg.appendChild(read);
  svg.onmousemove = ev => {
    const r = svg.getBoundingClientRect(), mx = (ev.clientX - r.left) / r.width * W;
    let best = null;
    for (const p of pts) if (p.t >= t0 && (!best || Math.abs(x(p.t) - mx) < Math.abs(x(best.t) - mx))) best = p;
    if (!best) return;
    cursor.setAttribute('x1', x(best.t)); cursor.setAttribute('x2', x(best.t));
    cursor.setAttribute('visibility', 'visible');
    read.textContent = clock(best.t, 0) + '  ' + series.map(s => s.name + ' ' + fmt(s.get(best))).join('  ');
  };
  svg.onmouseleave = () => { cursor.setAttribute('visibility', 'hidden'); read.textContent = ''; };
}

const rate = p => (p.results_per_s === null ? null : p.results_per_s);

function drawSummary() {
  const pts = state.points, last = pts[pts.length - 1], div = document.getElementById('summary');
  div.textContent = '';
  let results = 0, failed = 0;
  for (const p of pts) { results += p.results; failed += p.failed; }
  const cards = last ? [
    ['results/s', fmt(rate(last))], ['results in range', fmt(results)], ['failed tries in range', fmt(failed)],
    ['book positions', fmt(last.positions)], ['thought', fmt(last.thought)],
    ['root value', last.root_value === null ? '–' : (last.root_value > 0 ? '+' : '') + last.root_value],
    ['workers', fmt(last.workers)], ['nodes/s', fmt(last.nps)], ['queue', fmt(last.queue)],
    ['live leases', fmt(last.leases)], ['set aside', fmt(last.set_aside)],
  ] : [['points', '0']];
  for (const [k, v] of cards) {
    const c = h('div', undefined, 'card');
    c.appendChild(h('div', v, 'v'));
    c.appendChild(h('div', k, 'k'));
    div.appendChild(c);
  }
  const fresh = document.getElementById('freshness');
  if (!last) {
    fresh.textContent = 'No history in this range: the book has none yet, or the coordinator (joseki serve BOOK --work) has not run in it.';
    fresh.className = 'stale';
    return;
  }
  const step = steps(pts)[0] || 60, age = state.now - last.t;
  fresh.className = age > 3 * step ? 'stale' : '';
  fresh.textContent = 'Last point ' + ago(age) + (age > 3 * step ? ': the coordinator is not recording now (stopped, or not this server); this is what the book kept.' : '.') +
    ' ' + pts.length + ' points in range, one every ' + fmt(step) + ' s recently, coarser further back.';
}

const START_SFEN = 'lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1';

// The explorer's link to a position: the root and the first k moves of a line.
function explorerLink(root, moves) {
  const base = root === START_SFEN ? 'startpos' : 'sfen ' + root;
  return '/#position=' + encodeURIComponent(base + (moves.length ? ' moves ' + moves.join(' ') : ''));
}

// A line as a player writes it (the server's names; USI where it has none),
// each move a link to the explorer at the position after it.
function lineNodes(p) {
  const span = document.createElement('span'), usi = p.pv ? p.pv.split(' ') : [];
  usi.forEach((m, i) => {
    const name = p.pv_names && p.pv_names[i] ? p.pv_names[i] : m;
    if (i) span.appendChild(document.createTextNode(' '));
    if (p.root) {
      const a = h('a', name, 'move');
      a.href = explorerLink(p.root, usi.slice(0, i + 1));
      a.title = m;
      span.appendChild(a);
    } else {
      span.appendChild(h('span', name, 'move'));
    }
  });
  return span;
}

// Which root a point's value and line are of, linked to the explorer.
function rootNodes(p) {
  const span = document.createElement('span');
  if (!p.root) {
    span.textContent = 'The root was not recorded (a point of an older coordinator).';
    return span;
  }
  span.appendChild(document.createTextNode('From '));
  const a = h('a', p.root === START_SFEN ? 'the start position' : 'the root ' + p.root, p.root === START_SFEN ? '' : 'usi');
  a.href = explorerLink(p.root, []);
  a.id = 'root-link';
  span.appendChild(a);
  if (p.roots > 1) span.appendChild(document.createTextNode(' (the first of the coordinator\'s ' + p.roots + ' roots)'));
  span.appendChild(document.createTextNode(':'));
  return span;
}

function drawLine() {
  const pts = state.points, last = pts[pts.length - 1];
  const pv = document.getElementById('pv'), root = document.getElementById('root');
  pv.textContent = root.textContent = '';
  if (last) root.appendChild(rootNodes(last));
  if (last && last.pv) {
    if (last.root_value !== null) pv.appendChild(h('span', (last.root_value > 0 ? '+' : '') + last.root_value, 'value'));
    pv.appendChild(lineNodes(last));
  } else {
    pv.textContent = 'No line yet: no move from the root has a value.';
  }
  // Where the first moves of the line changed, newest first.
  const body = document.querySelector('#changes tbody');
  body.textContent = '';
  const head = p => p.pv.split(' ').slice(0, 4).join(' ');
  const changes = [];
  let prev = null;
  for (const p of pts) {
    if (!p.pv) continue;
    if (prev === null || head(p) !== prev) changes.push(p);
    prev = head(p);
  }
  for (const p of changes.slice(-12).reverse()) {
    const tr = document.createElement('tr');
    tr.appendChild(h('td', clock(p.t, state.hours * 3600 || 1e9)));
    tr.appendChild(h('td', p.root_value === null ? '–' : (p.root_value > 0 ? '+' : '') + p.root_value));
    const td = document.createElement('td');
    td.appendChild(lineNodes(p));
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

function drawAll() {
  // The charts' time axis: the range, or less when the history is shorter
  // (from a step before its first point).
  const pts = state.points, from = state.hours ? state.now - state.hours * 3600 : -Infinity;
  const first = pts.find(p => p.t >= from);
  const lead = first ? (steps(pts)[first.tier] || 60) : 0;
  state.t0 = first ? Math.max(from, first.t - lead) : (state.hours ? from : state.now - 3600);
  drawSummary();
  chart('chart-rate', [{ name: 'results/s', get: rate }]);
  chart('chart-book', [{ name: 'positions', get: p => p.positions, integer: true }, { name: 'thought', get: p => p.thought, integer: true }]);
  chart('chart-root', [{ name: 'value', get: p => p.root_value, integer: true }], { symmetric: true });
  chart('chart-workers', [{ name: 'nodes/s', get: p => p.nps, integer: true }, { name: 'workers', get: p => p.workers, right: true, integer: true }]);
  drawLine();
}

async function loadHistory() {
  try {
    const r = await fetch('/v1/work/history?hours=' + state.hours);
    const j = await r.json();
    if (!r.ok) throw new Error(j.error || r.statusText);
    state.points = j.points;
    state.now = j.now;
    drawAll();
  } catch (e) {
    const f = document.getElementById('freshness');
    f.className = 'stale';
    f.textContent = 'Cannot read the history: ' + e.message;
  }
}

// ---- live status (needs a token) ------------------------------------------------

async function loadLive() {
  const note = document.getElementById('live-note');
  const wb = document.querySelector('#workers tbody'), ab = document.querySelector('#aside tbody');
  const tb = document.querySelector('#tokens tbody'), spotLine = document.getElementById('spot-status');
  const live = document.getElementById('live-status');
  if (!state.token) {
    note.textContent = 'The workers (names, engines, nodes/s) and the set-aside positions need a token; a read-only one ' +
      '(joseki token add BOOK/tokens NAME --read) can see them but never lease or submit.';
    wb.textContent = ab.textContent = tb.textContent = spotLine.textContent = live.textContent = '';
    document.body.classList.remove('has-token');
    return;
  }
  try {
    const r = await fetch('/v1/work/status', { headers: { Authorization: 'Bearer ' + state.token } });
    const j = await r.json().catch(() => ({}));
    if (r.status === 401) throw new Error('the token was refused');
    if (r.status === 404) throw new Error('this server is not a coordinator (joseki serve BOOK --work)');
    if (!r.ok) throw new Error(j.error || r.statusText);
    document.body.classList.add('has-token');
    note.textContent = '';
    live.textContent = `now: ${fmt(j.results_per_s)} results/s over the last minute, ${fmt(j.results)} results since the coordinator started, ` +
      `workers ${j.workers.length} live, ${(j.workers_gone || []).length} gone in the last hour, ` +
      `queue ${j.queue}, leases ${j.leases.live} live ${j.leases.expired} expired, ${j.failed_tries} failed tries, ${j.minimax_runs} minimax runs`;
    wb.textContent = '';
    // The live workers, then those gone in the last hour (stopped, or silent
    // for a minute), greyed.
    const gone = (j.workers_gone || []).map(w => Object.assign({ gone: true }, w));
    for (const w of j.workers.sort((a, b) => a.name.localeCompare(b.name)).concat(gone)) {
      const tr = document.createElement('tr');
      if (w.gone) tr.className = 'gone';
      tr.appendChild(h('td', w.name));
      tr.appendChild(h('td', w.engine || '–'));
      tr.appendChild(h('td', w.gone ? '–' : fmt(w.nps)));
      tr.appendChild(h('td', ago(w.last_seen_s) + (w.gone ? (w.why === 'stopped' ? ': stopped' : ': silent, gone') : '')));
      wb.appendChild(tr);
    }
    if (!j.workers.length && !gone.length) { const tr = document.createElement('tr'); tr.appendChild(h('td', 'no worker in the last hour')); wb.appendChild(tr); }
    ab.textContent = '';
    for (const a of j.set_aside) {
      const tr = document.createElement('tr');
      tr.appendChild(h('td', a.key, 'usi'));
      tr.appendChild(h('td', a.tries));
      const td = document.createElement('td'), link = h('a', a.sfen, 'usi');
      link.href = '/#position=' + encodeURIComponent('sfen ' + a.sfen);
      td.appendChild(link);
      tr.appendChild(td);
      ab.appendChild(tr);
    }
    if (!j.set_aside.length) { const tr = document.createElement('tr'); tr.appendChild(h('td', 'none')); ab.appendChild(tr); }
    drawSpot(j.spot, tb, spotLine);
  } catch (e) {
    document.body.classList.remove('has-token');
    note.textContent = 'Live status: ' + e.message + '.';
    wb.textContent = ab.textContent = tb.textContent = spotLine.textContent = live.textContent = '';
  }
}

// The spot checks (docs/cluster.md, "Spot checks"): what is under way and
// what came of them, and each token: its results, how they fared, and a
// quarantine with its reason.
function drawSpot(spot, tb, line) {
  tb.textContent = '';
  if (!spot || !spot.on) {
    line.textContent = 'Spot checks are off (serve --spot-rate 0 --spot-new-rate 0).';
  } else {
    const c = spot.checks, o = spot.outcomes, pct = x => fmt(x * 100) + ' %';
    line.textContent = `Spot checks: ${pct(spot.rate)} of each token's results (${pct(spot.new_rate)} of its first ${spot.new_results}) ` +
      `thought again by another token, tolerance ${spot.tolerance}; now ${c.waiting} waiting, ${c.leased} leased, ${c.deciding} ` +
      `waiting for a third; since the start ${o.agreed} agreed, ${o.disagreed} disagreed, ${o.strikes} strikes, ` +
      `${o.disproved} mate claims disproved, ${spot.quarantines} tokens put in quarantine (${spot.taken_out} results taken out).`;
  }
  const tokens = (spot && spot.tokens) || [];
  for (const t of tokens.sort((a, b) => a.token.localeCompare(b.token))) {
    const tr = document.createElement('tr');
    for (const v of [t.token, fmt(t.results), fmt(t.compared), fmt(t.passed), t.strikes, fmt(t.unverified), fmt(t.kept), t.held]) tr.appendChild(h('td', String(v)));
    let st = 'trusted';
    if (t.quarantined) {
      tr.className = 'quarantined';
      st = `in quarantine since ${new Date(t.quarantined.since * 1000).toLocaleString()} (${t.quarantined.taken_out} results taken out): ${t.quarantined.reason}`;
    } else if (t.last_fault) {
      st = 'trusted; last fault: ' + t.last_fault;
    }
    tr.appendChild(h('td', st));
    tb.appendChild(tr);
  }
  if (!tokens.length) { const tr = document.createElement('tr'); tr.appendChild(h('td', 'no token has asked for work yet')); tb.appendChild(tr); }
}

document.querySelectorAll('#range button').forEach(b => b.addEventListener('click', () => {
  state.hours = +b.dataset.hours;
  document.querySelectorAll('#range button').forEach(x => x.classList.toggle('on', x === b));
  loadHistory();
}));
document.getElementById('token-form').addEventListener('submit', e => {
  e.preventDefault();
  state.token = document.getElementById('token').value.trim();
  sessionStorage.setItem('joseki-token', state.token);
  loadLive();
});
document.getElementById('forget').addEventListener('click', () => {
  state.token = '';
  sessionStorage.removeItem('joseki-token');
  document.getElementById('token').value = '';
  loadLive();
});
document.getElementById('token').value = state.token;
loadHistory();
loadLive();
setInterval(loadHistory, 15000);
setInterval(loadLive, 5000);
