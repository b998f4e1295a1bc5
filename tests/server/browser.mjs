// tests/server/browser.mjs URL SHOT_DIR — the explorer in a real browser
// (Debian's chromium, driven by playwright-core): the loading state while the
// book's answer is held back, the start position on the board, won / drawn /
// lost in numbers and the legend, a click on the book's best move, the board
// and the table change, back, a declined promotion, an SFEN pasted, a bare
// move list typed to a
// position no engine analysed ("not analysed"), and screenshots.
// tests/server/browser.mjs --work URL SHOT_DIR TOKEN WORKER [QUARANTINED] — the work page
// (work.html) of a coordinator that has been recording: every chart has
// points and round ticks (whole numbers for counts), the summary and the
// book's line are shown, its root named and linked to the explorer, its moves
// as a player writes them, each a link to the explorer; no worker name
// without a token; a wrong token is refused; with TOKEN the workers table
// names WORKER, and the tokens table shows the token QUARANTINED in
// quarantine with its reason.
// Prints "ok ..." lines; exits non-zero with the reason on the first failure.
// Run by tests/server/test_server.c.
import { chromium } from 'playwright-core';

const work = process.argv[2] === '--work';
const [url, shots, token, worker, quarantined] = process.argv.slice(work ? 3 : 2);
const fail = msg => { console.error('FAIL ' + msg); process.exit(1); };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1180, height: 760 } });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('requestfailed', r => { if (!r.url().startsWith(url)) errors.push('fetched outside: ' + r.url()); });
  page.on('request', r => { if (!r.url().startsWith(url)) errors.push('fetched outside: ' + r.url()); });
  if (work) {
    await workPage(page);
    if (errors.length) fail('page errors: ' + errors.join('; '));
  } else {
    // The loading state: with the book's answer held back, the page says it
    // is loading (it showed an empty board).
    let release;
    const held = new Promise(r => (release = r));
    await page.route(/\/v1\/query\?/, async route => { await held; await route.continue(); });
    await page.goto(url + '/');
    await page.waitForSelector('body.loading #board-loading');
    const loading = await page.textContent('#status');
    const placeholder = await page.textContent('#moves tbody');
    if (!loading.includes('Loading') || !placeholder.includes('loading')) fail(`loading state: '${loading}' '${placeholder}'`);
    await page.screenshot({ path: shots + '/explorer-loading.png' });
    console.log('ok loading: ' + loading.trim());
    release();
    await page.waitForSelector('#moves tbody tr[data-move]');
    await page.unroute(/\/v1\/query\?/);
    if (await page.$('body.loading')) fail('still loading after the answer came');

    // The start position: 40 pieces, Black's king (玉) on 5i, Black to move.
    const pieces = await page.$$eval('#board g.piece', g => g.length);
    if (pieces !== 40) fail(`start position shows ${pieces} pieces`);
    const turn = await page.textContent('#turn');
    if (!turn.includes('Black')) fail('turn: ' + turn);
    console.log('ok start position: 40 pieces, ' + turn.trim());

    // The games through each move in numbers beside the bar, and a legend
    // that says what the colours (grey: no result) and the columns mean.
    const wdl = await page.$$eval('#moves tbody td.wdl .nums', n => n.map(x => x.textContent));
    if (!wdl.length || !wdl.every(t => /^\d+ \/ \d+ \/ \d+( \(\d+ no result\))?$/.test(t))) fail('won/drawn/lost: ' + wdl.join(', '));
    const legend = await page.textContent('#legend');
    for (const w of ['won', 'drawn', 'lost', 'no result', 'not analysed', 'game comment'])
      if (!legend.includes(w)) fail(`the legend does not say '${w}': ${legend}`);
    if (!(await page.isVisible('#legend'))) fail('the legend is hidden');
    console.log('ok won/drawn/lost in numbers (' + wdl.join(', ') + ') and a legend');
    // Moves as a player writes them: two golds reach 5h, the book's 4i5h is ▲５八金右.
    const names = await page.$$eval('#moves tbody tr', rows => rows.map(r => r.dataset.move + '=' + r.querySelector('td.mv').textContent));
    if (!names.includes('4i5h=▲５八金右')) fail('move names: ' + names.join(' '));
    console.log('ok moves named as a player writes them: ' + names.join(' '));

    // The hand mark test_server.c made (joseki avoid --note 'browser test').
    const mark = await page.$$eval('#moves tbody tr.avoided td.mark', t => t.map(x => x.textContent + ' | ' + x.title));
    if (mark.length !== 1 || !mark[0].startsWith('✕ avoided: browser test') || !mark[0].includes('a hand mark'))
      fail('the hand mark: ' + JSON.stringify(mark));
    console.log('ok the hand mark shown: ' + mark[0]);

    // The best move (first row, starred) is followed by a click on its row.
    const best = await page.getAttribute('#moves tbody tr.best', 'data-move');
    const before = await page.textContent('#moves tbody');
    await page.screenshot({ path: shots + '/explorer-start.png' });
    await page.click('#moves tbody tr.best');
    await page.waitForFunction(b => location.hash.includes(encodeURIComponent(b)), best);
    await page.waitForFunction(t => document.querySelector('#turn').textContent.includes('White'), null);
    const after = await page.textContent('#moves tbody');
    if (after === before) fail('the move table did not change after ' + best);
    const marked = await page.$$eval('#board rect.last', r => r.length);
    if (marked !== 2) fail(`the last move should mark 2 squares, marks ${marked}`);
    console.log('ok followed the best move ' + best + '; table changed; last move marked');
    await page.screenshot({ path: shots + '/explorer.png' });

    // The browser's back button returns to the start position.
    await page.goBack();
    await page.waitForFunction(() => document.querySelector('#turn').textContent.includes('Black'));
    if ((await page.textContent('#moves tbody')) !== before) fail('back did not restore the table');
    console.log('ok back to the start position');

    // A declined promotion (test_server.c imported 8h2b 60 beside 8h2b+ 50
    // after 7g7f 3c3d): greyed, after the moves played, and why.
    await page.fill('#spec', '7g7f 3c3d');
    await page.click('#goto button');
    await page.waitForFunction(() => decodeURIComponent(location.hash).includes('startpos moves 7g7f 3c3d'));
    await page.waitForSelector('#moves tbody tr[data-move="8h2b"]');
    const declined = await page.$$eval('#moves tbody tr.declined', r => r.map(x => x.dataset.move + ': ' + x.querySelector('td.mark').textContent));
    if (declined.length !== 1 || declined[0] !== '8h2b: declined: not played while 8h2b+ has a value') fail('declined: ' + JSON.stringify(declined));
    const rows = await page.$$eval('#moves tbody tr', r => r.map(x => x.dataset.move));
    if (rows.indexOf('8h2b+') < 0 || rows.indexOf('8h2b+') > rows.indexOf('8h2b')) fail('declined order: ' + rows.join(' '));
    console.log('ok a declined promotion shown: ' + declined[0]);
    await page.screenshot({ path: shots + '/explorer-declined.png' });

    // An SFEN pasted into the box: a position with a promoted piece (red).
    await page.fill('#spec', 'lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4');
    await page.click('#goto button');
    await page.waitForFunction(() => document.querySelector('#turn').textContent.includes('White'));
    const red = await page.$$eval('#board g.piece text', t => t.filter(x => x.getAttribute('fill') === '#c0201c').length);
    if (red !== 1) fail(`one promoted (red) piece expected, ${red} shown`);
    const status = await page.textContent('#status');
    console.log('ok pasted SFEN shown (' + status.trim() + ')');
    await page.screenshot({ path: shots + '/explorer-sfen.png' });

    // Clicking piece then square plays a move (7c7d for White).
    await page.click('#board rect[data-sq="7c"]');
    await page.click('#board rect[data-sq="7d"]');
    await page.waitForFunction(() => location.hash.includes('7c7d'));
    console.log('ok a move made by clicking piece and square');

    // A bare move list typed into the box (as joseki query takes it): a
    // position of the games the engine has not analysed. A move without a
    // value says "not analysed" where its value would be, as the command line
    // does (value null, unvalued: why), and so does the position.
    await page.fill('#spec', '4i5h 8c8d 5h4h 8d8e 6i7h');
    await page.click('#goto button');
    await page.waitForFunction(() => decodeURIComponent(location.hash).includes('startpos moves 4i5h 8c8d 5h4h 8d8e 6i7h'));
    await page.waitForFunction(() => document.querySelector('#turn').textContent.includes('White'));
    const unvalued = await page.$$eval('#moves tbody tr.unvalued', r => r.map(x => x.dataset.move + ': ' + x.children[3].textContent + ' (' + x.children[4].textContent + ')'));
    if (!unvalued.length || !unvalued.every(t => t.includes('not analysed'))) fail('unvalued moves: ' + unvalued.join(', '));
    const said = await page.textContent('#status');
    if (!said.includes('not analysed')) fail('the position: ' + said);
    console.log('ok moves without a value say so: ' + unvalued.join(', ') + '; ' + said.trim());
    await page.screenshot({ path: shots + '/explorer-unanalysed.png' });
    if (errors.length) fail('page errors: ' + errors.join('; '));
  }
} finally {
  await browser.close();
}

async function workPage(page) {
  await page.goto(url + '/work.html');
  // Every chart drawn with points from the history.
  for (const id of ['chart-rate', 'chart-book', 'chart-root', 'chart-workers']) {
    await page.waitForFunction(i => +(document.getElementById(i).dataset.points || 0) >= 2, id, { timeout: 15000 })
      .catch(() => fail(id + ': fewer than 2 points drawn'));
    const lines = await page.$$eval('#' + id + ' polyline', p => p.length);
    if (lines < 1) fail(id + ': no line');
  }
  const counts = await page.$$eval('svg.chart', s => s.map(x => x.id + ' ' + x.dataset.points));
  console.log('ok charts drawn: ' + counts.join(', '));
  // Round ticks (1, 2 or 5 times a power of ten apart), whole numbers for counts.
  for (const id of ['chart-rate', 'chart-book', 'chart-root', 'chart-workers']) {
    const axes = await page.$eval('#' + id, s => [s.dataset.ticks, s.dataset.ticksRight]);
    if (axes[0] === undefined || (id === 'chart-workers' && axes[1] === undefined)) fail(id + ': no ticks');
    axes.forEach((t, right) => {
      if (t === undefined) return;
      const v = t.split(' ').map(Number), step = v[1] - v[0];
      const mant = step / Math.pow(10, Math.floor(Math.log10(step) + 1e-9));
      if (v.length < 2 || ![1, 2, 5].some(m => Math.abs(mant - m) < 1e-6)) fail(`${id}: ticks ${t} are not round`);
      for (let i = 1; i < v.length; i++) if (Math.abs(v[i] - v[i - 1] - step) > step * 1e-6) fail(`${id}: ticks ${t} uneven`);
      if (id !== 'chart-rate' && v.some(x => !Number.isInteger(x))) fail(`${id}: counts ticked ${t}`);
    });
  }
  const labels = await page.$$eval('#chart-workers text.tick', t => t.map(x => x.textContent));
  console.log('ok round ticks; the workers chart: ' + labels.join(' '));
  const cards = await page.$$eval('#summary .card', c => c.map(x => x.textContent));
  if (!cards.some(c => c.includes('book positions'))) fail('no summary: ' + cards.join(' | '));
  // The line: its root named and linked to the explorer, its moves as a player writes them.
  const root = await page.textContent('#root');
  const href = await page.getAttribute('#root-link', 'href').catch(() => null);
  if (!root.includes('start position') || href !== '/#position=startpos') fail(`the root: '${root}' ${href}`);
  const moves = await page.$$eval('#pv a.move', a => a.map(x => [x.textContent, x.getAttribute('href'), x.title]));
  if (!moves.length || !/^[▲△][１-９同]/.test(moves[0][0])) fail('the line is not in Japanese: ' + JSON.stringify(moves));
  if (moves[0][1] !== '/#position=' + encodeURIComponent('startpos moves ' + moves[0][2])) fail('a move\'s link: ' + moves[0][1]);
  const pv = await page.textContent('#pv');
  console.log('ok summary (' + cards.length + ' figures); ' + root.trim() + ' ' + pv.trim());
  const body = await page.textContent('body');
  if (body.includes(worker)) fail('the worker\'s name is shown without a token');
  if (await page.isVisible('#workers')) fail('the workers table is shown without a token');
  await page.screenshot({ path: shots + '/work.png', fullPage: true });
  // A move of the line opens the explorer at the position after it.
  await page.click('#pv a.move');
  await page.waitForFunction(m => location.pathname === '/' && location.hash.includes(encodeURIComponent(m)), moves[0][2]);
  await page.waitForSelector('#moves tbody tr');
  console.log('ok the line\'s first move opens the explorer at ' + decodeURIComponent(await page.evaluate(() => location.hash)));
  await page.goBack();
  await page.waitForSelector('#pv a.move');
  // A range button redraws from the server.
  await page.click('#range button[data-hours="1"]');
  await page.waitForFunction(() => document.querySelector('#range button.on').dataset.hours === '1');
  // A wrong token is refused; the right one shows the workers.
  await page.fill('#token', '0'.repeat(64));
  await page.click('#token-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('live-note').textContent.includes('refused'));
  console.log('ok a wrong token refused');
  await page.fill('#token', token);
  await page.click('#token-form button[type=submit]');
  await page.waitForSelector('#workers tbody tr');
  const names = await page.$$eval('#workers tbody td:first-child', t => t.map(x => x.textContent));
  if (!names.includes(worker)) fail('workers table: ' + names.join(', '));
  const liveText = await page.textContent('#live-status');
  if (!liveText.includes('results/s')) fail('live status: ' + liveText);
  console.log('ok with the token: workers ' + names.join(', ') + '; ' + liveText.trim());
  if (quarantined) {
    await page.waitForSelector('#tokens tr.quarantined');
    const row = await page.$$eval('#tokens tr.quarantined td', t => t.map(x => x.textContent));
    if (row[0] !== quarantined || !row[row.length - 1].includes('in quarantine')) fail('tokens table: ' + row.join(' | '));
    const spot = await page.textContent('#spot-status');
    if (!spot.includes('1 tokens put in quarantine')) fail('spot checks line: ' + spot);
    console.log('ok the token ' + quarantined + ' shown in quarantine: ' + row[row.length - 1]);
  }
  await page.screenshot({ path: shots + '/work-token.png', fullPage: true });
  await page.click('#forget');
  await page.waitForFunction(() => !document.body.classList.contains('has-token'));
  console.log('ok token forgotten');
}
