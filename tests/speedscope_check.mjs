// speedscope_check.mjs - the viewers tier: the exports the README names speedscope for are
// opened in speedscope itself (its built web app, from npm) in headless Chromium, and what it
// shows must be the trace's threads and frames as `trace-dump summary --json` gives them.
//
// Usage: node tests/speedscope_check.mjs BUILD_DIR MODULES_DIR CHROMIUM
//   BUILD_DIR    the build (build/bin/trace-run, trace-dump, build/tests/prog_*)
//   MODULES_DIR  where `npm install speedscope puppeteer-core` put node_modules (make test-viewers)
//   CHROMIUM     the browser to drive (Debian's chromium; puppeteer-core downloads none)
//
// It records programs with trace-run (prog_demo: five threads, spans, allocations;
// prog_finst_names: -finstrument-functions across three modules; prog_finst_cxx: demangled C++
// names), exports each with `trace-dump chrome`, `flame` and `pprof --alloc`, serves
// speedscope's files and the exports from an HTTP server on 127.0.0.1 (a free port), opens
// index.html#profileURL=... in a fresh page per export and checks:
//   loads     the toolbar's views appear; no "Something went wrong", no alert, no failed
//             request, no page error, no console error or warning (speedscope warns for each
//             "E" it cannot pair with a "B" and for each frame left open) while it loads and
//             while the views are switched
//   threads   chrome: one profile per thread of the summary, titled "COMMAND (pid P), NAME (tid
//             T)" (the profile selector's rows, or the toolbar's title when there is one)
//   frames    chrome, flame: the sandwich view's table, read in every profile: its symbol names
//             are the summary's span names and function names (and, in flame, a frame per
//             process, "PROG (pid P)", totalling its lines), no more, no fewer, and each
//             name's Total (summed over the profiles) is the summary's total within the
//             rounding shown (flame's weights: exactly)
//   heap      pprof: the Self column sums to the summary's alloc_bytes within the rounding
//             shown, and the spans of the summary's memory table that allocated are frames
// Prints one line per check; exits 1 on the first failure, saying what speedscope showed.
//
// Threads: one (node's event loop); the HTTP server answers the browser from it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [build, modules, chromium] = process.argv.slice(2).map((p) => (p ? resolve(p) : p));
if (!build || !modules || !chromium) {
  console.error('usage: node tests/speedscope_check.mjs BUILD_DIR MODULES_DIR CHROMIUM');
  process.exit(2);
}
const req = createRequire(join(modules, 'node_modules') + '/');
const puppeteer = (await import(pathToFileURL(req.resolve('puppeteer-core')).href)).default;
const app = join(modules, 'node_modules', 'speedscope', 'dist', 'release');

// How long speedscope may take to import one export (the demo's JSON is tens of MB).
const LOAD_TIMEOUT_MS = 60000;

const dir = mkdtempSync(join(tmpdir(), 'trc-viewers-'));
let browser = null;
let server = null;

function fail(msg) {
  console.error('FAIL: ' + msg);
  throw new Error('check failed');
}
const show = (xs) => JSON.stringify(xs);

const run = (bin, args) =>
  execFileSync(join(build, bin), args, { encoding: 'utf8', maxBuffer: 1 << 28 });
const runTo = (file, bin, args) => writeFileSync(file, run(bin, args));

// speedscope's files from its package, the exports from the scratch directory (/trace/NAME).
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.png': 'image/png', '.ico': 'image/x-icon', '.wasm': 'application/wasm', '.woff2': 'font/woff2' };
function serve(rq, rs) {
  const url = decodeURIComponent(new URL(rq.url, 'http://x').pathname);
  const base = url.startsWith('/trace/') ? dir : app;
  const rel = normalize(url.startsWith('/trace/') ? url.slice(7) : url).replace(/^(\.\.\/)+/, '');
  let body;
  try {
    body = readFileSync(join(base, rel === '/' ? 'index.html' : rel));
  } catch {
    rs.writeHead(404);
    rs.end();
    return;
  }
  rs.writeHead(200, { 'content-type': types[extname(rel)] || 'application/octet-stream' });
  rs.end(body);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Opens one export in a fresh page; returns the page and the list of errors it reports.
async function open(port, name) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 2400 });
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warn') errors.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  page.on('dialog', async (d) => {
    errors.push('alert: ' + d.message());
    await d.dismiss();
  });
  page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
  const profile = `http://127.0.0.1:${port}/trace/${name}`;
  await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=${encodeURIComponent(profile)}`);
  const t0 = Date.now();
  for (;;) {
    const text = await page.evaluate(() => document.body.innerText);
    if (/Something went wrong/.test(text))
      fail(`${name}: speedscope says "${text.match(/Something went wrong[^\n]*/)[0]}" (${errors.length} errors, first: ${errors[0] || 'none'})`);
    if (errors.length) fail(`${name}: while loading, ${errors.length} errors, first: ${errors[0]}`);
    if (/Sandwich/.test(text) && /Time Order/.test(text)) break;
    if (Date.now() - t0 > LOAD_TIMEOUT_MS)
      fail(`${name}: no profile after ${LOAD_TIMEOUT_MS} ms; the page shows: ${text.slice(0, 300)}`);
    await sleep(100);
  }
  await sleep(100); // what the import logged as it finished
  if (errors.length) fail(`${name}: while loading, ${errors.length} errors, first: ${errors[0]}`);
  return { page, errors };
}

// The profiles speedscope offers: the profile selector's rows (several), or the title line.
async function profileTitles(page) {
  return page.evaluate(() => {
    const rows = [...document.querySelectorAll('tr[title]')].map((r) => r.title);
    if (rows.length) return rows;
    return document.body.innerText.split('\n').filter((l) => l.trim() && !/Time Order|Export|Sandwich/.test(l));
  });
}

// The sandwich view's table, profile by profile (the 'n' key: next profile): per symbol name
// its Total column summed over the profiles, in ns, with the rounding of the figures shown.
async function sandwichTotals(page, nprofiles, file) {
  const tab = await page.$('xpath/.//div[normalize-space(.)="🥪Sandwich"]');
  if (!tab) fail(`${file}: no "Sandwich" tab in the toolbar`);
  await tab.click();
  const totals = new Map();
  for (let i = 0; i < nprofiles; i++) {
    if (i) await page.keyboard.press('n');
    let got = null;
    for (let tries = 0; tries < 100 && !got; tries++) {
      got = await page.evaluate((want) => {
        if (want && !document.body.innerText.includes(want)) return null; // not yet on profile i
        const rows = [...document.querySelectorAll('tr:not([title])')].filter((r) => r.cells.length === 3 && r.querySelector('td'));
        if (!rows.length) return null;
        // the list is virtual: its height is that of all its rows, shown or not
        const list = rows[0].closest('table').parentElement.parentElement;
        const cut = Math.round(parseFloat(list.style.height) / rows[0].getBoundingClientRect().height) !== rows.length;
        return { cut, rows: rows.map((r) => [r.cells[2].textContent.trim(), r.cells[0].textContent.trim(), r.cells[1].textContent.trim()]) };
      }, nprofiles > 1 ? `(${i + 1}/${nprofiles})` : '');
      if (!got) await sleep(50);
    }
    if (!got) fail(`${file}: profile ${i + 1} of ${nprofiles}: the sandwich view shows no table`);
    if (got.cut) fail(`${file}: profile ${i + 1}: the sandwich table has more rows than the window shows`);
    for (const [name, text, selfText] of got.rows) {
      const t = totals.get(name) || { ns: 0, err: 0, shown: [], self: 0, selfErr: 0 };
      const v = shown(text);
      const sv = shown(selfText);
      if (!v || !sv) fail(`${file}: the sandwich view's Total "${text}" or Self "${selfText}" of ${name} is not a figure`);
      t.ns += v.ns;
      t.err += v.err;
      t.self += sv.ns;
      t.selfErr += sv.err;
      t.shown.push(text.replace(/\s*\(.*$/, ''));
      totals.set(name, t);
    }
  }
  return totals;
}

// A figure as speedscope shows it (field ns: in ns or bytes) and half its last digit (err):
// "1.19s (>99%)", "4.96ms", "98.41µs", "20.00ns" (chrome's times); "2,288,293,417" (flame's
// weights, ns); "170.91 MB", "4.00 KB", "12 B" (pprof's bytes, powers of 1024).
function shown(text) {
  const t = text.replace(/\s*\(.*$/, '');
  const unit = { s: 1e9, ms: 1e6, 'µs': 1e3, ns: 1, ' B': 1, ' KB': 1024, ' MB': 1 << 20, ' GB': 1 << 30 };
  let m = t.match(/^([\d.]+)(s|ms|µs|ns| B| KB| MB| GB)$/);
  if (m) return { ns: Number(m[1]) * unit[m[2]], err: m[2] === ' B' ? 0.5 : 0.005 * unit[m[2]] };
  m = t.match(/^(\d+):(\d\d)$/);
  if (m) return { ns: (Number(m[1]) * 60 + Number(m[2])) * 1e9, err: 1e9 };
  m = t.match(/^[\d,]+$/);
  if (m) return { ns: Number(t.replaceAll(',', '')), err: 0 };
  return null;
}

// Every frame shown with the summary's total (ns) for its name, within the rounding shown.
function sameTotals(file, totals, want) {
  sameSet(`${file}: sandwich frames`, new Set(totals.keys()), new Set(want.keys()));
  for (const [name, w] of want) {
    const g = totals.get(name);
    // +1 ns a profile: chrome's times are microseconds with 3 decimals, added as doubles
    if (Math.abs(g.ns - w) > g.err + g.shown.length)
      fail(`${file}: ${name} totals ${g.shown.join(' + ')} in speedscope, ${w} ns in summary --json`);
  }
}

function sameSet(what, got, want) {
  const missing = [...want].filter((x) => !got.has(x));
  const extra = [...got].filter((x) => !want.has(x));
  if (missing.length || extra.length)
    fail(`${what}: speedscope shows ${show([...got].sort())}, summary --json says ${show([...want].sort())}` +
      ` (missing ${show(missing)}, not in the trace ${show(extra)})`);
}

try {
  server = createServer(serve);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // root needs --no-sandbox; the flame views draw with WebGL, here on SwiftShader; en-US
    // for the figures' digit grouping (flame's weights are shown with toLocaleString)
    args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--no-first-run', '--lang=en-US'],
  });

  const traces = [
    { name: 'demo', argv: ['tests/prog_demo'] },
    { name: 'names', argv: ['tests/prog_finst_names'] },
    { name: 'cxx', argv: ['tests/prog_finst_cxx'] },
  ];
  for (const t of traces) {
    const trc = join(dir, t.name + '.trc');
    run('bin/trace-run', ['-q', '-o', trc, '--', join(build, t.argv[0]), ...t.argv.slice(1)]);
    const s = JSON.parse(run('bin/trace-dump', ['summary', '--json', trc]));
    run('bin/trace-dump', ['chrome', '-o', join(dir, t.name + '.json'), trc]);
    runTo(join(dir, t.name + '.folded'), 'bin/trace-dump', ['flame', trc]);
    // the summary's frames: span names (their total) and function names (total, recursion once;
    // a row per process, added up by name)
    const fnTotals = new Map();
    for (const f of s.functions) fnTotals.set(f.name, (fnTotals.get(f.name) || 0) + Number(f.total_ns));
    const frames = new Map([...s.names.filter((n) => Number(n.spans)).map((n) => [n.name, Number(n.span_total_ns)]),
      ...fnTotals]);
    if (!frames.size) fail(`${t.name}: the summary has no span and no function: nothing to look for`);

    // chrome: one profile per thread
    {
      const file = t.name + '.json';
      const { page, errors } = await open(port, file);
      console.log(`ok ${file}: speedscope loads it, no error`);
      const cmd = Object.fromEntries(s.processes.map((p) => [p.pid, p.command.join(' ')]));
      const want = new Set(s.threads.map((th) => `${cmd[th.pid]} (pid ${th.pid}), ${th.name} (tid ${th.tid})`));
      const titles = await profileTitles(page);
      sameSet(`${file}: profiles`, new Set(titles.map((x) => x.replace(/ \(\d+\/\d+\)$/, '').trim())), want);
      if (titles.length !== want.size) fail(`${file}: ${titles.length} profiles ${show(titles)} for ${want.size} threads`);
      console.log(`ok ${file}: ${titles.length} profiles, one per thread: ${s.threads.map((th) => th.name).join(', ')}`);
      sameTotals(file, await sandwichTotals(page, titles.length, file), frames);
      if (errors.length) fail(`${file}: ${errors.length} errors in the views, first: ${errors[0]}`);
      console.log(`ok ${file}: sandwich view names the ${frames.size} frames of the summary with its totals: ${[...frames.keys()].join(', ')}`);
      await page.close();
    }
    // flame: folded stacks, one profile, each line under its process's frame "PROG (pid P)"
    // (PROG: the command's first word without its directories), whose total is its lines'
    {
      const file = t.name + '.folded';
      const procFrame = Object.fromEntries(s.processes.map((p) => [`${p.command[0].replace(/^.*\//, '')} (pid ${p.pid})`, 0]));
      const flameFrames = new Map(frames);
      for (const line of readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean)) {
        const stack = line.slice(0, line.lastIndexOf(' '));
        const root = stack.split(';')[0];
        if (!(root in procFrame)) fail(`${file}: the line "${line}" starts at no process of the summary (${show(Object.keys(procFrame))})`);
        flameFrames.set(root, (flameFrames.get(root) || 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
      }
      const { page, errors } = await open(port, file);
      console.log(`ok ${file}: speedscope loads it, no error`);
      sameTotals(file, await sandwichTotals(page, 1, file), flameFrames);
      if (errors.length) fail(`${file}: ${errors.length} errors in the views, first: ${errors[0]}`);
      console.log(`ok ${file}: sandwich view names the ${frames.size} frames of the summary and ${flameFrames.size - frames.size} of its processes with their totals`);
      await page.close();
    }
    // pprof --alloc: a heap profile, one profile; its first sample type is what speedscope
    // weighs by. Every byte allocated is some frame's self: the Self column sums to alloc_bytes.
    if (Number(s.allocs)) {
      const file = t.name + '.pb.gz';
      run('bin/trace-dump', ['pprof', '--alloc', '-o', join(dir, file), trc]);
      const { page, errors } = await open(port, file);
      console.log(`ok ${file}: speedscope loads it, no error`);
      const totals = await sandwichTotals(page, 1, file);
      let self = 0;
      let err = 0;
      for (const v of totals.values()) {
        self += v.self;
        err += v.selfErr;
      }
      if (Math.abs(self - Number(s.alloc_bytes)) > err)
        fail(`${file}: the Self column sums to ${self} bytes (within ${err}) in speedscope, alloc_bytes is ${s.alloc_bytes} in summary --json`);
      const spans = s.names.filter((n) => Number(n.spans)).map((n) => n.name);
      const inSpans = [...new Set(s.memory.flatMap((m) => m.sites.map((x) => x.name)))].filter((n) => spans.includes(n));
      const missing = inSpans.filter((n) => !totals.has(n));
      if (missing.length) fail(`${file}: speedscope shows no frame ${show(missing)} (allocating spans of the summary's memory table); it shows ${show([...totals.keys()])}`);
      if (errors.length) fail(`${file}: ${errors.length} errors in the views, first: ${errors[0]}`);
      console.log(`ok ${file}: ${totals.size} frames; the Self column sums to the summary's ${s.alloc_bytes} bytes allocated` +
        (inSpans.length ? `; allocating spans shown: ${inSpans.join(', ')}` : ''));
      await page.close();
    }
  }
  console.log('test-viewers: all checks passed');
} catch (e) {
  if (e.message !== 'check failed') console.error('FAIL: ' + (e.stack || String(e)));
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  if (server) server.close();
  rmSync(dir, { recursive: true, force: true });
}
