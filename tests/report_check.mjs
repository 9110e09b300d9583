// report_check.mjs - the report tier: `trace-dump report`'s page, opened in headless Chromium
// as a user would open it, must show what `trace-dump summary --json` says.
//
// Usage: node tests/report_check.mjs BUILD_DIR MODULES_DIR CHROMIUM OUT_DIR
//   BUILD_DIR    the build (bin/trace-run, bin/trace-dump, tests/prog_*)
//   MODULES_DIR  where npm put puppeteer-core (make's viewers install, build/viewers)
//   CHROMIUM     the browser to drive (Debian's chromium; puppeteer-core downloads none)
//   OUT_DIR      where the pages and the screenshot are kept (build/report)
//
// It records prog_demo (five threads, spans, allocations) and prog_finst_names (functions),
// writes each one's report, opens it from a file:// URL with every network request refused,
// and checks:
//   loads    no page error, no console error or warning, no request beyond the file itself
//   bound    the page is under 5 MiB
//   chart    the RSS chart has 3 series per process with samples and allocations (RSS, live
//            heap, RSS not in the heap), 1 without allocations; each RSS series has one point
//            per sample (the runs are short: every sample has a column of its own)
//   hover    the pointer on the RSS series' highest point shows the summary's
//            rss_sampled_max_bytes for that process, exactly; the live heap shown there is at
//            most live_peak_bytes
//   flames   the flame graph by bytes weighs alloc_bytes in all, the one by time the total of
//            `trace-dump flame`; search by a span name marks frames; a click zooms to a frame
//   tables   one row per span of the summary (its count), per function (its calls), per thread
//   damaged  the page of a trace cut short says what was damaged, and still loads cleanly
// and keeps a screenshot of the demo's page (OUT_DIR/report.png). Exits 1 on the first failure.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync, truncateSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [build, modules, chromium, outDir] = process.argv.slice(2).map((p) => (p ? resolve(p) : p));
if (!build || !modules || !chromium || !outDir) {
  console.error('usage: node tests/report_check.mjs BUILD_DIR MODULES_DIR CHROMIUM OUT_DIR');
  process.exit(2);
}
const req = createRequire(join(modules, 'node_modules') + '/');
const puppeteer = (await import(pathToFileURL(req.resolve('puppeteer-core')).href)).default;
mkdirSync(outDir, { recursive: true });

function fail(msg) {
  console.error('FAIL: ' + msg);
  throw new Error('check failed');
}
const run = (bin, args) => execFileSync(join(build, bin), args, { encoding: 'utf8', maxBuffer: 1 << 28 });

async function open(browser, file) {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn' || m.type() === 'warning') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  await page.setRequestInterception(true);
  const url = pathToFileURL(file).href;
  page.on('request', (r) => {
    if (r.url() === url) return r.continue();
    errors.push('request: ' + r.url());
    r.abort();
  });
  await page.setViewport({ width: 1100, height: 900 });
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  return { page, errors };
}

let browser = null;
try {
  browser = await puppeteer.launch({ executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--no-first-run', '--lang=en-US'] });
  for (const t of [{ name: 'demo', prog: 'tests/prog_demo' }, { name: 'names', prog: 'tests/prog_finst_names' }]) {
    const trc = join(outDir, t.name + '.trc'), html = join(outDir, t.name + '.html');
    run('bin/trace-run', ['-q', '-o', trc, '--', join(build, t.prog)]);
    const s = JSON.parse(run('bin/trace-dump', ['summary', '--json', trc]));
    run('bin/trace-dump', ['report', '-o', html, trc]);
    const size = statSync(html).size;
    if (size >= 5 << 20) fail(`${t.name}: the page is ${size} bytes, not under 5 MiB`);
    const { page, errors } = await open(browser, html);
    console.log(`ok ${t.name}.html (${size} bytes): loads from file://, no network`);

    // chart: series and points
    const sampled = s.processes.filter((p) => p.rss_samples > 0);
    const heaps = new Set(s.live_by_process.filter((h) => h.allocs > 0).map((h) => h.pid));
    const want = sampled.reduce((n, p) => n + (heaps.has(p.pid) ? 3 : 1), 0);
    const got = await page.$$eval('#rss-chart path.series', (ps) => ps.map((p) => ({ key: p.dataset.key, pid: +p.dataset.pid, points: +p.dataset.points })));
    if (got.length !== want) fail(`${t.name}: ${got.length} series in the RSS chart, want ${want}: ${JSON.stringify(got)}`);
    for (const p of sampled) {
      const g = got.find((x) => x.key === 'rss' && x.pid === p.pid);
      if (!g || g.points !== p.rss_samples) fail(`${t.name}: pid ${p.pid}: RSS series ${JSON.stringify(g)}, want ${p.rss_samples} points`);
    }
    console.log(`ok ${t.name}: RSS chart has ${got.length} series, ${sampled.map((p) => p.rss_samples).join(', ')} points per RSS series, as the summary's samples`);

    // hover on the highest point of each RSS series
    for (const p of sampled) {
      const pos = await page.$eval(`#rss-chart path.series[data-key="rss"][data-pid="${p.pid}"]`, (path) => {
        const pts = path.getAttribute('d').slice(1).split(/[ML]/).map((q) => q.split(',').map(Number));
        let best = pts[0];
        for (const q of pts) if (q[1] < best[1]) best = q;
        const box = path.ownerSVGElement.getBoundingClientRect();
        return { x: box.left + best[0], y: box.top + best[1] };
      });
      await page.mouse.move(pos.x, pos.y);
      const tipText = await page.$eval('#tooltip', (e) => e.textContent);
      const line = tipText.split('\n').find((l) => l.startsWith(`pid ${p.pid} `) && l.includes(': RSS: '));
      if (!line || !line.endsWith(`(${p.rss_sampled_max_bytes} B)`))
        fail(`${t.name}: hover shows ${JSON.stringify(tipText)}, want RSS ${p.rss_sampled_max_bytes} B for pid ${p.pid}`);
      const live = tipText.split('\n').find((l) => l.startsWith(`pid ${p.pid} `) && l.includes(': live heap: '));
      const heap = s.live_by_process.find((h) => h.pid === p.pid);
      if (heap && heap.allocs > 0) {
        const v = live ? Number(live.match(/\((\d+) B\)$/)[1]) : NaN;
        if (!(v <= heap.live_peak_bytes)) fail(`${t.name}: hover's live heap ${JSON.stringify(live)} above live_peak_bytes ${heap.live_peak_bytes}`);
      }
      console.log(`ok ${t.name}: hover on pid ${p.pid}'s highest point shows ${p.rss_sampled_max_bytes} B, the summary's rss_sampled_max_bytes`);
    }

    // flames
    const totals = await page.$$eval('.flame', (fs) => Object.fromEntries(fs.map((f) => [f.id, Number(f.dataset.total)])));
    if (totals['flame-bytes'] !== s.alloc_bytes) fail(`${t.name}: flame by bytes weighs ${totals['flame-bytes']}, alloc_bytes is ${s.alloc_bytes}`);
    const folded = run('bin/trace-dump', ['flame', trc]).split('\n').filter(Boolean).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    if (totals['flame-time'] !== folded) fail(`${t.name}: flame by time weighs ${totals['flame-time']}, trace-dump flame ${folded}`);
    const spans = s.names.filter((n) => n.spans > 0);
    const probe = spans.length ? spans[0].name : s.functions.length ? s.functions[0].name : null;
    if (probe) {
      await page.type('#flame-time-search', probe);
      const found = await page.$eval('#flame-time-found', (e) => e.textContent);
      const hits = await page.$$eval('#flame-time div.f.hit', (d) => d.length);
      if (!hits || !/^\d+ frames? match/.test(found)) fail(`${t.name}: search "${probe}": ${hits} marked, "${found}"`);
      await page.$$eval('#flame-time div.f', (ds, name) => ds.find((d) => d.dataset.name === name).click(), probe);
      const rootName = await page.$eval('#flame-time', (f) => f.dataset.root);
      if (rootName !== probe) fail(`${t.name}: click on "${probe}" zoomed to "${rootName}"`);
      console.log(`ok ${t.name}: flame graphs weigh ${s.alloc_bytes} B and ${folded} ns; search marks ${hits} "${probe}" frames; click zooms to it`);
    }

    // tables
    const rows = await page.$$eval('#spans tr', (tr) => tr.slice(1).map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
    const wantRows = spans.slice().sort((a, b) => b.span_total_ns - a.span_total_ns || (a.name < b.name ? -1 : 1)).slice(0, 200);
    if (JSON.stringify(rows) !== JSON.stringify(wantRows.map((n) => [n.name, String(n.spans)])))
      fail(`${t.name}: spans table ${JSON.stringify(rows)}, summary ${JSON.stringify(wantRows.map((n) => [n.name, n.spans]))}`);
    const hists = await page.$$eval('#spans svg.hist', (h) => h.length);
    if (hists !== rows.length) fail(`${t.name}: ${hists} duration histograms for ${rows.length} spans`);
    const frows = await page.$$eval('#functions tr', (tr) => tr.slice(1).map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
    const wantF = s.functions.slice().sort((a, b) => b.total_ns - a.total_ns || (a.name < b.name ? -1 : 1)).slice(0, 200).map((f) => [f.name, String(f.calls)]);
    if (JSON.stringify(frows.slice().sort()) !== JSON.stringify(wantF.slice().sort()))
      fail(`${t.name}: functions table ${JSON.stringify(frows)}, summary ${JSON.stringify(wantF)}`);
    const threads = await page.$$eval('#threads tr', (tr) => tr.length - 1);
    if (threads !== s.threads.length) fail(`${t.name}: ${threads} threads shown, the summary has ${s.threads.length}`);
    console.log(`ok ${t.name}: ${rows.length} spans, ${frows.length} functions, ${threads} threads, as the summary`);

    if (t.name === 'demo') {
      await page.mouse.move(0, 0);
      await page.screenshot({ path: join(outDir, 'report.png'), fullPage: true });
      console.log(`ok screenshot: ${join(outDir, 'report.png')}`);
    }
    if (errors.length) fail(`${t.name}: ${errors.length} errors, first: ${errors[0]}`);
    await page.close();
  }

  // a trace cut short: its page says so, and loads cleanly
  const cut = join(outDir, 'cut.trc'), cutHtml = join(outDir, 'cut.html');
  writeFileSync(cut, readFileSync(join(outDir, 'demo.trc')));
  truncateSync(cut, Math.floor(statSync(cut).size * 0.6));
  run('bin/trace-dump', ['report', '-o', cutHtml, cut]);
  const { page, errors } = await open(browser, cutHtml);
  const damage = await page.$eval('#damage', (e) => e.textContent).catch(() => '');
  if (!damage.includes('footer is missing')) fail(`cut.html: damage shown: ${JSON.stringify(damage)}`);
  if (errors.length) fail(`cut.html: ${errors.length} errors, first: ${errors[0]}`);
  console.log('ok cut.html: says "' + damage.slice(0, 90) + '..."');
  await page.close();
} catch (e) {
  if (e.message !== 'check failed') console.error('FAIL: ' + (e.stack || e));
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
}
