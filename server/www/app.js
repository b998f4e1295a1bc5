// joseki book explorer: the board (SVG drawn here), the book's moves for the
// position, click to follow. The position lives in the URL hash
// (#position=startpos moves 7g7f), so the browser's back/forward and a shared
// link work. Everything comes from this server's /v1 API; until its answer is
// in, the page says it is loading (body.loading) instead of showing nothing.
'use strict';

const KANJI = { P: '歩', L: '香', N: '桂', S: '銀', G: '金', B: '角', R: '飛', K: '玉',
  '+P': 'と', '+L': '杏', '+N': '圭', '+S': '全', '+B': '馬', '+R': '龍' };
const MOVE_NAME = { P: '歩', L: '香', N: '桂', S: '銀', G: '金', B: '角', R: '飛', K: '玉',
  '+P': 'と', '+L': '成香', '+N': '成桂', '+S': '成銀', '+B': '馬', '+R': '龍' };
const RANKS = '一二三四五六七八九';
const FILES = '１２３４５６７８９';
const HAND_ORDER = ['R', 'B', 'G', 'S', 'N', 'L', 'P'];
const SVGNS = 'http://www.w3.org/2000/svg';

const state = { spec: 'startpos', flipped: false, pos: null, answer: null, sel: null };

// ---- positions ---------------------------------------------------------------

function parseSfen(sfen) {
  const [board, side, hand] = sfen.trim().split(/\s+/);
  const rows = board.split('/');
  const cells = []; // cells[rank 0..8][col 0..8], col 0 = file 9
  for (const row of rows) {
    const r = [];
    for (let i = 0; i < row.length; i++) {
      const c = row[i];
      if (c >= '1' && c <= '9') { for (let k = 0; k < +c; k++) r.push(null); continue; }
      let promoted = false, ch = c;
      if (c === '+') { promoted = true; ch = row[++i]; }
      const black = ch === ch.toUpperCase();
      r.push({ type: (promoted ? '+' : '') + ch.toUpperCase(), black });
    }
    cells.push(r);
  }
  const hands = { b: {}, w: {} };
  if (hand && hand !== '-') {
    const re = /(\d*)([A-Za-z])/g;
    let m;
    while ((m = re.exec(hand))) {
      const n = m[1] ? +m[1] : 1, ch = m[2];
      const h = ch === ch.toUpperCase() ? hands.b : hands.w;
      h[ch.toUpperCase()] = (h[ch.toUpperCase()] || 0) + n;
    }
  }
  return { cells, black: side === 'b', hands };
}

function sq(usi) { // "7g" -> {rank, col}
  return { rank: usi.charCodeAt(1) - 97, col: 9 - +usi[0] };
}

function splitSpec(spec) {
  const s = spec.trim().replace(/^position\s+/, '');
  const i = s.indexOf(' moves ');
  if (i < 0) return { base: s.replace(/\s+moves$/, ''), moves: [] };
  return { base: s.slice(0, i), moves: s.slice(i + 7).trim().split(/\s+/).filter(Boolean) };
}

function withMove(spec, usi) {
  const { base, moves } = splitSpec(spec);
  return base + ' moves ' + moves.concat([usi]).join(' ');
}

// Japanese notation of a USI move in pos, e.g. ▲７六歩, △同　歩, ▲５五角打: the
// fallback for a server that does not name its moves. The server's "name"
// (/v1/query, /v1/line) is what a player writes, with 右/左/上/引/寄/直 where two
// pieces of a kind can reach the square, and 不成 (shogi/japanese.h).
function japanese(pos, usi, lastTo) {
  const mark = pos.black ? '▲' : '△';
  let to, name, suffix = '';
  if (usi[1] === '*') {
    to = usi.slice(2, 4);
    name = MOVE_NAME[usi[0]];
    suffix = '打';
  } else {
    to = usi.slice(2, 4);
    const f = sq(usi.slice(0, 2));
    const p = pos.cells[f.rank][f.col];
    name = p ? MOVE_NAME[p.type] : '?';
    if (usi.endsWith('+')) suffix = '成';
  }
  const where = lastTo === to ? '同　' : FILES[+to[0] - 1] + RANKS[to.charCodeAt(1) - 97];
  return mark + where + name + suffix;
}

// ---- drawing --------------------------------------------------------------------

const B0 = 20, T0 = 34, C = 48; // board left, top, cell size

function el(name, attrs, text) {
  const e = document.createElementNS(SVGNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Screen cell of board cell (rank, col) and back.
function screen(rank, col) { return state.flipped ? { r: 8 - rank, c: 8 - col } : { r: rank, c: col }; }

function drawBoard() {
  const svg = document.getElementById('board');
  svg.textContent = '';
  const pos = state.pos;
  svg.appendChild(el('rect', { x: B0 - 6, y: T0 - 6, width: 9 * C + 12, height: 9 * C + 12, fill: '#d9b26a', rx: 4 }));
  svg.appendChild(el('rect', { x: B0, y: T0, width: 9 * C, height: 9 * C, fill: '#eccb86', stroke: '#3b2a14', 'stroke-width': 2 }));
  // The last move's squares.
  const { moves } = splitSpec(state.spec);
  const last = moves.length ? moves[moves.length - 1] : null;
  const mark = [];
  if (last) {
    if (last[1] !== '*') mark.push(sq(last.slice(0, 2)));
    mark.push(sq(last.slice(2, 4)));
  }
  for (const m of mark) {
    const s = screen(m.rank, m.col);
    svg.appendChild(el('rect', { x: B0 + s.c * C, y: T0 + s.r * C, width: C, height: C, fill: '#f5d76e', class: 'last' }));
  }
  if (state.sel && state.sel.from) {
    const f = sq(state.sel.from), s = screen(f.rank, f.col);
    svg.appendChild(el('rect', { x: B0 + s.c * C, y: T0 + s.r * C, width: C, height: C, fill: '#9fd3a0' }));
  }
  for (let i = 1; i < 9; i++) {
    svg.appendChild(el('line', { x1: B0 + i * C, y1: T0, x2: B0 + i * C, y2: T0 + 9 * C, stroke: '#3b2a14', 'stroke-width': 1 }));
    svg.appendChild(el('line', { x1: B0, y1: T0 + i * C, x2: B0 + 9 * C, y2: T0 + i * C, stroke: '#3b2a14', 'stroke-width': 1 }));
  }
  for (const [x, y] of [[3, 3], [6, 3], [3, 6], [6, 6]])
    svg.appendChild(el('circle', { cx: B0 + x * C, cy: T0 + y * C, r: 3, fill: '#3b2a14' }));
  // Coordinates: files 9..1 above, ranks 一..九 at the right (turned with the board).
  for (let i = 0; i < 9; i++) {
    const file = state.flipped ? i + 1 : 9 - i;
    svg.appendChild(el('text', { x: B0 + i * C + C / 2, y: T0 - 12, 'text-anchor': 'middle', 'font-size': 15, fill: '#3b2a14' }, String(file)));
    const rank = state.flipped ? 8 - i : i;
    svg.appendChild(el('text', { x: B0 + 9 * C + 16, y: T0 + i * C + C / 2 + 6, 'text-anchor': 'middle', 'font-size': 15, fill: '#3b2a14' }, RANKS[rank]));
  }
  for (let rank = 0; rank < 9; rank++)
    for (let col = 0; col < 9; col++) {
      const p = pos.cells[rank][col];
      if (!p) continue;
      const s = screen(rank, col);
      const cx = B0 + s.c * C + C / 2, cy = T0 + s.r * C + C / 2;
      const up = p.black !== state.flipped; // points up the screen
      const g = el('g', { transform: `translate(${cx},${cy})` + (up ? '' : ' rotate(180)'), class: 'piece' });
      g.appendChild(el('path', { d: 'M0,-21 L15,-14 L19,20 L-19,20 L-15,-14 Z', fill: '#f7e2b0', stroke: '#7a5a2a', 'stroke-width': 1.2 }));
      const red = p.type[0] === '+';
      g.appendChild(el('text', { x: 0, y: 10, 'text-anchor': 'middle', 'font-size': 26, 'font-weight': 600, fill: red ? '#c0201c' : '#111' }, KANJI[p.type]));
      svg.appendChild(g);
    }
  // The last move's squares again, over the pieces, lightly.
  for (const m of mark) {
    const s = screen(m.rank, m.col);
    svg.appendChild(el('rect', { x: B0 + s.c * C + 1, y: T0 + s.r * C + 1, width: C - 2, height: C - 2, fill: 'none', stroke: '#e0a800', 'stroke-width': 3 }));
  }
  // A transparent grid on top takes the clicks.
  for (let r = 0; r < 9; r++)
    for (let c = 0; c < 9; c++) {
      const rank = state.flipped ? 8 - r : r, col = state.flipped ? 8 - c : c;
      const usi = String(9 - col) + String.fromCharCode(97 + rank);
      const hit = el('rect', { x: B0 + c * C, y: T0 + r * C, width: C, height: C, fill: 'transparent', 'data-sq': usi });
      hit.addEventListener('click', () => clickSquare(usi));
      svg.appendChild(hit);
    }
}

function drawHands() {
  const pos = state.pos;
  const top = document.getElementById('hand-top'), bottom = document.getElementById('hand-bottom');
  const fill = (div, color) => {
    div.textContent = '';
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = color === 'b' ? '☗ 先手 (Black) hand' : '☖ 後手 (White) hand';
    div.appendChild(who);
    const h = pos.hands[color];
    let any = false;
    for (const t of HAND_ORDER) {
      if (!h[t]) continue;
      any = true;
      const s = document.createElement('span');
      s.className = 'hp' + (state.sel && state.sel.drop === t && (color === 'b') === pos.black ? ' sel' : '');
      s.textContent = KANJI[t];
      if (h[t] > 1) { const n = document.createElement('small'); n.textContent = h[t]; s.appendChild(n); }
      s.addEventListener('click', () => clickHand(color, t));
      div.appendChild(s);
    }
    if (!any) { const s = document.createElement('span'); s.className = 'who'; s.textContent = 'none'; div.appendChild(s); }
  };
  fill(state.flipped ? bottom : top, 'w');
  fill(state.flipped ? top : bottom, 'b');
  document.getElementById('turn').textContent = (pos.black ? '☗ Black (先手)' : '☖ White (後手)') + ' to move' +
    (state.answer ? ` — ${state.answer.legal_moves} legal moves` : '');
}

function pct(n, d) { return d ? (100 * n / d).toFixed(1) + '%' : '0'; }

// The move's mark (avoided or preferred, by hand or by prune): a short word,
// the note beside it, and who made it and when in the cell's title; for a
// declined promotion, why the book does not play it.
function markCell(m) {
  const td = document.createElement('td');
  td.className = 'mark';
  const mk = m.mark;
  if (!mk && m.declined) {
    // A pawn, bishop or rook left unpromoted beside its valued promotion.
    const promo = m.move + '+';
    td.classList.add('declined');
    td.textContent = `declined: not played while ${promo} has a value`;
    td.title = `left unpromoted where ${promo} has a value: the book plays the promotion, ` +
      'and this value (its own) counts nowhere';
    return td;
  }
  if (!mk) return td;
  td.classList.add(mk.kind);
  const word = mk.kind === 'avoid' ? '✕ avoided' : `◎ preferred (${mk.window})`;
  td.textContent = word + (mk.note ? ': ' + mk.note : '');
  const when = mk.time !== undefined ? ', ' + new Date(mk.time * 1000).toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : '';
  td.title = `${word} — ${mk.source === 'hand' ? 'a hand mark' : "prune's mark"}${when}${mk.note ? ': ' + mk.note : ''}`;
  return td;
}

function h(tag, text, cls) {
  const e = document.createElement(tag);
  e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

// A move without a value: "not analysed" in its value's place (what the
// command line's "unvalued" says, put for a player), the detail where its
// value's source would be: a game comment is another program's opinion,
// not an analysis.
function whyUnvalued(m) {
  const why = m.unvalued || 'not analysed';
  return why === 'not analysed' || why === 'game comment only' ? ['not analysed', why === 'game comment only' ? 'game comment only' : '–'] : [why, '–'];
}

// The games through a move: their number, a bar (won, drawn, lost, and no
// result: games whose record ends without a winner or a draw) and the numbers.
function wdlCell(m) {
  const td = document.createElement('td');
  td.className = 'wdl';
  const games = m.count || 0;
  td.appendChild(h('span', String(games), 'games'));
  if (!games) return td;
  const none = Math.max(0, games - m.wins - m.draws - m.losses);
  const bar = document.createElement('span');
  bar.className = 'bar';
  bar.title = `${m.wins} won, ${m.draws} drawn, ${m.losses} lost` + (none ? `, ${none} without a result` : '') +
    ' (the mover\'s side)';
  for (const [k, n] of [['w', m.wins], ['d', m.draws], ['l', m.losses], ['n', none]]) {
    const s = document.createElement('span');
    s.className = k;
    s.style.width = pct(n, games);
    bar.appendChild(s);
  }
  td.appendChild(bar);
  const nums = document.createElement('span');
  nums.className = 'nums';
  nums.textContent = `${m.wins} / ${m.draws} / ${m.losses}` + (none ? ` (${none} no result)` : '');
  td.appendChild(nums);
  return td;
}

// While the book's answer is on its way: said, not an empty board.
function setLoading(on, spec) {
  document.body.classList.toggle('loading', on);
  if (!on) return;
  const status = document.getElementById('status');
  status.className = 'loading';
  status.textContent = 'Loading the book\'s answer for ' + (spec === 'startpos' ? 'the start position' : spec) + '…';
  if (!state.pos) {
    const body = document.querySelector('#moves tbody');
    body.textContent = '';
    const tr = document.createElement('tr'), td = document.createElement('td');
    td.colSpan = 10;
    td.className = 'placeholder';
    td.textContent = 'loading the moves…';
    tr.appendChild(td);
    body.appendChild(tr);
    const svg = document.getElementById('board');
    svg.textContent = '';
    svg.appendChild(el('rect', { x: B0 - 6, y: T0 - 6, width: 9 * C + 12, height: 9 * C + 12, fill: '#d9b26a', rx: 4 }));
    svg.appendChild(el('rect', { x: B0, y: T0, width: 9 * C, height: 9 * C, fill: '#eccb86', stroke: '#3b2a14', 'stroke-width': 2 }));
    svg.appendChild(el('text', { x: B0 + 4.5 * C, y: T0 + 4.5 * C, 'text-anchor': 'middle', 'font-size': 22, fill: '#5a4a30', id: 'board-loading' }, 'Loading the position…'));
  }
}

function drawMoves() {
  const a = state.answer, pos = state.pos;
  const status = document.getElementById('status');
  const body = document.querySelector('#moves tbody');
  body.textContent = '';
  const { moves } = splitSpec(state.spec);
  const lastTo = moves.length ? moves[moves.length - 1].slice(2, 4) : null;
  if (!a.in_book) {
    status.className = 'out';
    status.textContent = 'Not in book.';
  } else if (!a.moves.length) {
    status.className = 'out';
    status.textContent = a.legal_moves ? 'In the book, without moves.' : 'No legal moves: the side to move is mated.';
  } else if (a.bestmove === undefined) {
    status.className = 'unanalysed';
    status.textContent = `In book, not analysed: none of its ${a.moves.length} moves has a value yet, so the book has no move here ` +
      '(an engine thinks here; think or a worker would analyse it). Game comments are shown, never used as values.';
  } else {
    status.className = '';
    const unvalued = a.moves.filter(m => m.value === null || m.value === undefined).length;
    status.textContent = `In book: ${a.moves.length} moves${a.thought_depth ? ', analysed at depth ' + a.thought_depth : ''}` +
      ` — value ${a.value > 0 ? '+' : ''}${a.value}` + (unvalued ? `; ${unvalued} not analysed` : '');
  }
  a.moves.forEach((m, i) => {
    const tr = document.createElement('tr');
    const valued = m.value !== null && m.value !== undefined;
    if (i === 0 && a.bestmove !== undefined) tr.className = 'best';
    if (!valued) tr.classList.add('unvalued');
    const cells = [
      [i === 0 && a.bestmove !== undefined ? '★' : '', 'star'],
      [m.name || japanese(pos, m.move, lastTo), 'mv'],
      [m.move, 'usi'],
      [valued ? m.value : whyUnvalued(m)[0], valued ? '' : 'why nw', valued ? '' : 'no value: the book never plays it; ' + (m.unvalued || 'not analysed')],
      [valued ? m.value_source + (m.dist ? '/' + m.dist : '') : whyUnvalued(m)[1], valued ? '' : 'why'],
      [m.eval !== undefined ? m.eval : '–'],
      [m.depth !== undefined ? m.depth : '–'],
      [m.game_eval !== undefined ? m.game_eval : '–', '', m.game_eval !== undefined ? "a game record's comment: another program's opinion, not a value" : ''],
    ];
    for (const [text, cls, title] of cells) {
      const td = document.createElement('td');
      if (cls) td.className = cls;
      if (title) td.title = title;
      td.textContent = text;
      tr.appendChild(td);
    }
    tr.appendChild(wdlCell(m));
    const mark = markCell(m);
    tr.appendChild(mark);
    // The mark in the first column too: the table may be wider than the window.
    if (m.mark) {
      const badge = document.createElement('span');
      badge.className = 'badge ' + m.mark.kind;
      badge.textContent = m.mark.kind === 'avoid' ? '✕' : '◎';
      badge.title = mark.title;
      tr.querySelector('td.star').appendChild(badge);
    }
    if (m.avoided) tr.classList.add('avoided');
    if (m.declined) tr.classList.add('declined');
    tr.dataset.move = m.move;
    tr.addEventListener('click', () => follow(m.move));
    body.appendChild(tr);
  });
  document.getElementById('position-text').textContent = 'position ' + state.spec;
}

async function drawLine() {
  const div = document.getElementById('line');
  div.textContent = '';
  try {
    const r = await fetch('/v1/line?plies=16&position=' + encodeURIComponent(state.spec));
    if (!r.ok) return;
    const j = await r.json();
    if (!j.line.length) return;
    // Each step named by the server; USI where it gave no name.
    const words = j.line.map(step => step.name || step.move);
    div.textContent = 'Book line: ' + words.join(' ') +
      (j.end === 'repetition' ? ' (repeats)' : '');
  } catch (e) { /* the line is extra */ }
}

function render() {
  drawBoard();
  drawHands();
  drawMoves();
  drawLine();
}

// ---- loading and moving ------------------------------------------------------------

async function fetchPosition(spec) {
  const r = await fetch('/v1/query?position=' + encodeURIComponent(spec));
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

async function load(spec) {
  setLoading(true, spec);
  try {
    const a = await fetchPosition(spec);
    state.spec = spec;
    state.answer = a;
    state.pos = parseSfen(a.sfen);
    state.sel = null;
    setLoading(false);
    render();
  } catch (e) {
    setLoading(false);
    const status = document.getElementById('status');
    status.className = 'out';
    status.textContent = 'Cannot show that position: ' + e.message;
  }
}

function specFromHash() {
  const h = decodeURIComponent(location.hash.replace(/^#/, ''));
  return h.startsWith('position=') ? h.slice(9) : 'startpos';
}

function go(spec) {
  const hash = '#position=' + encodeURIComponent(spec);
  if (location.hash === hash) load(spec);
  else location.hash = hash;
}

async function follow(usi) {
  const spec = withMove(state.spec, usi);
  try {
    await fetchPosition(spec); // refused moves never reach the history
    go(spec);
  } catch (e) {
    state.sel = null;
    render();
    const status = document.getElementById('status');
    status.className = 'out';
    status.textContent = usi + ': ' + e.message;
  }
}

function canPromote(p, from, to) {
  if (!p || p.type[0] === '+' || p.type === 'G' || p.type === 'K') return false;
  const zone = r => (p.black ? r <= 2 : r >= 6);
  return zone(from.rank) || zone(to.rank);
}

function clickSquare(usi) {
  const pos = state.pos;
  const s = sq(usi), p = pos.cells[s.rank][s.col];
  const own = p && p.black === pos.black;
  if (state.sel && state.sel.drop) {
    if (!p) return follow(state.sel.drop + '*' + usi);
  } else if (state.sel && state.sel.from) {
    if (state.sel.from === usi) { state.sel = null; return render(); }
    if (!own) {
      const f = sq(state.sel.from), mover = pos.cells[f.rank][f.col];
      let mv = state.sel.from + usi;
      if (canPromote(mover, f, s)) {
        const inBook = state.answer.moves.map(m => m.move);
        if (inBook.includes(mv + '+') && !inBook.includes(mv)) mv += '+';
        else if (!inBook.includes(mv) && confirm('Promote?')) mv += '+';
      }
      return follow(mv);
    }
  }
  state.sel = own ? { from: usi } : null;
  render();
}

function clickHand(color, type) {
  if ((color === 'b') !== state.pos.black) return;
  state.sel = state.sel && state.sel.drop === type ? null : { drop: type };
  render();
}

document.getElementById('back').addEventListener('click', () => history.back());
document.getElementById('forward').addEventListener('click', () => history.forward());
document.getElementById('start').addEventListener('click', () => go('startpos'));
document.getElementById('flip').addEventListener('click', () => { state.flipped = !state.flipped; render(); });
document.getElementById('goto').addEventListener('submit', e => {
  e.preventDefault();
  let t = document.getElementById('spec').value.trim().replace(/^position\s+/, '');
  if (!t) return;
  // A bare move list is from the start position (as joseki query takes it).
  if (/^([1-9][a-i][1-9][a-i]\+?|[PLNSGBR]\*[1-9][a-i])(\s|$)/.test(t)) t = 'startpos moves ' + t;
  else if (!t.startsWith('startpos') && !t.startsWith('sfen ')) t = 'sfen ' + t;
  go(t);
});
window.addEventListener('hashchange', () => load(specFromHash()));
load(specFromHash());
