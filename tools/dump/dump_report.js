// dump_report.js - draws `trace-dump report`'s page from the JSON that dump_report.c writes
// beside it (the script element trc-data): the run at a glance, RSS and live heap over time, the
// flame graphs, the span and function tables, the threads. Inlined in the page: no network.
// Every figure shown comes from that JSON; the page computes only positions.
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('trc-data').textContent);
  const root = document.getElementById('app');
  const NS = 'http://www.w3.org/2000/svg';

  function el(tag, attrs, ...kids) {
    const e = tag.startsWith('svg:') ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else e.setAttribute(k, v);
    }
    for (const c of kids) if (c != null) e.append(c);
    return e;
  }
  function bytes(b) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0, v = b;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return i ? v.toFixed(1) + ' ' + u[i] : b + ' B';
  }
  function ns(t) {
    if (t < 1e3) return t + ' ns';
    if (t < 1e6) return (t / 1e3).toFixed(3) + ' us';
    if (t < 1e9) return (t / 1e6).toFixed(3) + ' ms';
    return (t / 1e9).toFixed(3) + ' s';
  }
  const fmt = (unit, v) => (unit === 'bytes' ? bytes(v) : unit === 'ns' ? ns(v) : String(v));
  const tip = el('div', { id: 'tooltip' });
  document.body.append(tip);
  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + 'px';
    tip.style.top = ev.clientY + 14 + 'px';
  }
  const hideTip = () => { tip.style.display = 'none'; };
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];

  // ---- the run at a glance ----
  root.append(el('h1', { text: 'trace report: ' + D.command }));
  if (D.damage.length) {
    root.append(el('div', { class: 'damage', id: 'damage' }, el('b', { text: 'This trace is damaged:' }),
      el('ul', {}, ...D.damage.map((d) => el('li', { text: d })))));
  }
  const glance = el('table', { class: 'glance', id: 'glance' });
  const row = (k, v) => glance.append(el('tr', {}, el('td', { text: k }), el('td', { text: v })));
  row('command', D.command);
  row('host', D.host);
  row('duration', ns(D.duration_ns));
  row('exit', D.exit);
  row('events', D.events_recorded + ' recorded, ' + D.events_lost + ' lost' +
    (D.lost_first_t_ns != null ? ' (from ' + ns(D.lost_first_t_ns) + ' to ' + ns(D.lost_last_t_ns) + ')' : ''));
  row('allocations', D.allocs + ' (' + bytes(D.alloc_bytes) + '), live at exit ' + bytes(D.live_end_bytes) +
    ', live peak ' + bytes(D.live_peak_bytes));
  root.append(glance);
  root.append(el('h2', { text: 'Processes: peak RSS' }));
  const pt = el('table', { id: 'processes' }, el('tr', {}, ...['pid', 'ppid', 'command', 'peak RSS', 'whose peak', 'exit', 'samples']
    .map((h) => el('th', { text: h, class: h === 'command' ? 'name' : '' }))));
  for (const p of D.processes) {
    pt.append(el('tr', {}, el('td', { text: p.pid }), el('td', { text: p.ppid }), el('td', { class: 'name', text: p.command, title: p.command }),
      el('td', { text: p.peak_high_bytes !== p.peak_bytes ? bytes(p.peak_bytes) + ' to ' + bytes(p.peak_high_bytes) : bytes(p.peak_bytes) }),
      el('td', { text: p.peak_source }), el('td', { text: p.exit }), el('td', { text: p.samples })));
  }
  root.append(pt);
  if (D.processes_more) root.append(el('p', { class: 'note', text: D.processes_more + ' more processes not listed' }));
  for (const n of D.notes) root.append(el('p', { class: 'note', text: 'note at ' + ns(n.t_ns) + ': ' + n.text }));

  // ---- RSS and live heap over time ----
  root.append(el('h2', { text: 'Memory over time: RSS of each process, its live heap, and RSS not in the heap' }));
  const series = [];
  D.rss.forEach((p, i) => {
    const c = palette[i % palette.length], label = 'pid ' + p.pid + ' ' + p.command;
    series.push({ name: label + ': RSS', key: 'rss', pid: p.pid, color: c, dash: '', pts: p.points.map((q) => [q[0], q[1]]) });
    if (p.points.some((q) => q[2] != null)) {
      series.push({ name: label + ': live heap', key: 'live', pid: p.pid, color: c, dash: '6 3', pts: p.points.filter((q) => q[2] != null).map((q) => [q[0], q[2]]) });
      series.push({ name: label + ': RSS not in the heap (mappings, stacks, code, fragmentation)', key: 'gap', pid: p.pid, color: c, dash: '1 3',
        pts: p.points.filter((q) => q[2] != null).map((q) => [q[0], Math.max(0, q[1] - q[2])]) });
    }
  });
  const W = 960, H = 320, ml = 70, mr = 40, mt = 10, mb = 28;
  const tmax = Math.max(1, D.duration_ns);
  let ymax = 1;
  for (const s of series) for (const q of s.pts) ymax = Math.max(ymax, q[1]);
  const X = (t) => ml + (t / tmax) * (W - ml - mr), Y = (v) => H - mb - (v / ymax) * (H - mt - mb);
  const svg = el('svg:svg', { width: W, height: H, id: 'rss-chart', 'data-series': series.length });
  for (let k = 0; k <= 4; k++) {
    const v = (ymax * k) / 4, y = Y(v);
    svg.append(el('svg:line', { x1: ml, x2: W - mr, y1: y, y2: y, stroke: '#eee' }));
    svg.append(el('svg:text', { x: ml - 4, y: y + 4, 'text-anchor': 'end', text: bytes(Math.round(v)) }));
  }
  for (let k = 0; k <= 5; k++) {
    const t = (tmax * k) / 5;
    svg.append(el('svg:text', { x: X(t), y: H - 8, 'text-anchor': 'middle', text: ns(Math.round(t)) }));
  }
  // lost events: the summary's lost columns, shaded
  const nl = D.lost_cols.length;
  D.lost_cols.forEach((n, i) => {
    if (!n) return;
    svg.append(el('svg:rect', { class: 'lost', x: X((tmax * i) / nl), width: Math.max(1, X((tmax * (i + 1)) / nl) - X((tmax * i) / nl)),
      y: mt, height: H - mt - mb, fill: '#f88', opacity: 0.25 }, el('svg:title', { text: n + ' events lost here' })));
  });
  // the largest rises, marked with what allocated most in each
  D.rises.forEach((r, i) => {
    const x0 = X(r.t0_ns), x1 = Math.max(X(r.t1_ns), x0 + 1);
    const what = '+' + bytes(r.rss_after - r.rss_before) + ' RSS; most allocated by ' + r.site + ' (' + bytes(r.site_bytes) + ')';
    svg.append(el('svg:rect', { class: 'rise', x: x0, width: x1 - x0, y: mt, height: H - mt - mb, fill: '#fd6', opacity: 0.3 },
      el('svg:title', { text: what })));
    svg.append(el('svg:text', { class: 'rise-label', x: x0 + 2, y: mt + 12 + 13 * i, text: '+' + bytes(r.rss_after - r.rss_before) + ': ' + r.site }));
  });
  series.forEach((s) => {
    const d = s.pts.map((q, i) => (i ? 'L' : 'M') + X(q[0]).toFixed(1) + ',' + Y(q[1]).toFixed(1)).join('');
    svg.append(el('svg:path', { class: 'series', 'data-name': s.name, 'data-key': s.key, 'data-pid': s.pid, 'data-points': s.pts.length,
      d: d || 'M0,0', fill: 'none', stroke: s.color, 'stroke-width': s.key === 'rss' ? 2 : 1.5, 'stroke-dasharray': s.dash }));
  });
  const cursor = el('svg:line', { y1: mt, y2: H - mb, stroke: '#888', visibility: 'hidden' });
  svg.append(cursor);
  // hover: the values of every series at the sample nearest the pointer
  svg.append(el('svg:rect', { x: ml, y: mt, width: W - ml - mr, height: H - mt - mb, fill: 'transparent', id: 'rss-hover', on: {
    mousemove(ev) {
      const box = svg.getBoundingClientRect();
      const t = ((ev.clientX - box.left - ml) / (W - ml - mr)) * tmax;
      let best = null;
      for (const s of series) for (const q of s.pts) if (!best || Math.abs(q[0] - t) < Math.abs(best - t)) best = q[0];
      if (best == null) return;
      cursor.setAttribute('x1', X(best)); cursor.setAttribute('x2', X(best)); cursor.setAttribute('visibility', 'visible');
      const lines = ['at ' + ns(best)];
      for (const s of series) {
        const q = s.pts.find((p) => p[0] === best);
        if (q) lines.push(s.name + ': ' + bytes(q[1]) + ' (' + q[1] + ' B)');
      }
      showTip(ev, lines.join('\n'));
    },
    mouseleave() { hideTip(); cursor.setAttribute('visibility', 'hidden'); },
  } }));
  const chart = el('div', { class: 'chart' }, svg);
  if (!series.length) chart.append(el('p', { class: 'note', text: 'no RSS samples in this trace' }));
  chart.append(el('div', { class: 'legend' }, ...series.map((s) => el('span', {}, el('i', { style: 'background:' + s.color + (s.dash ? ';opacity:.6' : '') }), s.name))));
  if (D.rss_more) chart.append(el('p', { class: 'note', text: D.rss_more + ' more processes with samples not charted (the ' + D.rss.length + ' with the largest RSS are)' }));
  chart.append(el('p', { class: 'note', text: 'Each point is the largest sample of its 1/' + D.rss_cols + ' of the run. Shaded red: events lost; yellow: the largest rises, with what allocated most in each.' }));
  root.append(chart);

  // ---- flame graphs ----
  function flame(id, title, F, unit) {
    root.append(el('h2', { text: title }));
    const tree = { name: 'all', w: 0, kids: new Map() };
    const add = (frames, w) => {
      let n = tree;
      n.w += w;
      for (const f of frames) {
        let k = n.kids.get(f);
        if (!k) { k = { name: f, w: 0, kids: new Map() }; n.kids.set(f, k); }
        k.w += w;
        n = k;
      }
    };
    for (const [st, w] of F.stacks) add(st.split(';'), w);
    if (F.other) add([F.other_name], F.other);
    const box = el('div', { class: 'flame', id });
    const search = el('input', { type: 'search', placeholder: 'search by name', id: id + '-search' });
    const found = el('span', { class: 'note', id: id + '-found' });
    const reset = el('button', { text: 'reset zoom', id: id + '-reset' });
    root.append(el('div', { class: 'flamebar' }, search, ' ', reset, ' ', found), box);
    let top = tree;
    const ROWH = 18;
    function draw() {
      box.textContent = '';
      const width = box.clientWidth || 960, q = search.value;
      let depth = 0, hits = 0, hitw = 0;
      const walk = (n, x, w, d, inHit) => {
        if (w < 0.5) return;
        depth = Math.max(depth, d);
        const hit = q && n.name.includes(q);
        if (hit && !inHit) hitw += n.w;
        if (hit) hits++;
        const hue = unit === 'bytes' ? 200 + (n.name.length * 7) % 40 : 10 + (n.name.length * 13) % 40;
        const div = el('div', { class: 'f' + (hit ? ' hit' : ''), text: n.name, 'data-name': n.name, 'data-weight': n.w,
          style: `left:${x}px;top:${d * ROWH}px;width:${w}px;background:hsl(${hue},70%,${hit ? 60 : 75}%)`, on: {
            click() { top = n; draw(); },
            mousemove(ev) { showTip(ev, n.name + '\n' + fmt(unit, n.w) + ' (' + ((100 * n.w) / Math.max(1, tree.w)).toFixed(2) + '% of all)'); },
            mouseleave: hideTip,
          } });
        box.append(div);
        let cx = x;
        const kids = [...n.kids.values()].sort((a, b) => b.w - a.w);
        for (const k of kids) {
          const kw = (k.w / Math.max(1, n.w)) * w;
          walk(k, cx, kw, d + 1, inHit || hit);
          cx += kw;
        }
      };
      walk(top, 0, width, 0, false);
      box.style.height = (depth + 1) * ROWH + 'px';
      found.textContent = q ? hits + (hits === 1 ? ' frame matches, ' : ' frames match, ') + ((100 * hitw) / Math.max(1, tree.w)).toFixed(2) + '% of ' + fmt(unit, tree.w) : '';
      box.setAttribute('data-root', top.name);
      box.setAttribute('data-total', tree.w);
    }
    search.addEventListener('input', draw);
    reset.addEventListener('click', () => { top = tree; draw(); });
    draw();
    if (!F.stacks.length && !F.other) box.append(el('p', { class: 'note', text: 'nothing to show' }));
    if (F.other_stacks) root.append(el('p', { class: 'note', text: F.other_stacks + ' lighter stacks summed into "' + F.other_name + '"' }));
  }
  flame('flame-time', 'Flame graph by time (self time of each stack; click to zoom)', D.flame_time, 'ns');
  flame('flame-bytes', 'Flame graph by bytes allocated (click to zoom)', D.flame_bytes, 'bytes');

  // ---- spans and functions ----
  function hist(bins, first) {
    const w = 160, h = 24, n = bins.length, max = Math.max(1, ...bins);
    const s = el('svg:svg', { class: 'hist', width: w, height: h, 'data-bins': n });
    bins.forEach((c, i) => {
      const bh = c ? Math.max(1, (c / max) * h) : 0;
      const g = first + i, lo = g ? 2 ** (g + 4) : 0, hi = 2 ** (g + 5);
      s.append(el('svg:rect', { x: (i * w) / n, width: Math.max(1, w / n - 1), y: h - bh, height: bh },
        el('svg:title', { text: c + ' between ' + ns(lo) + ' and ' + ns(hi) })));
    });
    return s;
  }
  function table(id, title, rows, more, cols) {
    root.append(el('h2', { text: title }));
    if (!rows.length) { root.append(el('p', { class: 'note', text: 'none in this trace' })); return; }
    const t = el('table', { id }, el('tr', {}, el('th', { class: 'name', text: 'name' }), ...cols.map((c) => el('th', { text: c[0] })),
      el('th', { text: 'durations (log2 bins)' })));
    for (const r of rows) {
      t.append(el('tr', {}, el('td', { class: 'name', text: r.name, title: r.name }), ...cols.map((c) => el('td', { text: fmt(c[2], r[c[1]]) })),
        el('td', {}, r.bins ? hist(r.bins, r.bins_first) : '')));
    }
    root.append(t);
    if (more) root.append(el('p', { class: 'note', text: more + ' more rows not shown (by total time)' }));
  }
  table('spans', 'Spans', D.spans, D.spans_more, [['count', 'count', 'count'], ['total', 'total_ns', 'ns'], ['mean', 'mean_ns', 'ns'],
    ['p50', 'p50_ns', 'ns'], ['p99', 'p99_ns', 'ns'], ['max', 'max_ns', 'ns']]);
  table('functions', 'Functions', D.functions, D.functions_more, [['calls', 'calls', 'count'], ['total', 'total_ns', 'ns'],
    ['self', 'self_total_ns', 'ns'], ['p50', 'p50_ns', 'ns'], ['p99', 'p99_ns', 'ns'], ['max', 'max_ns', 'ns']]);

  // ---- threads ----
  root.append(el('h2', { text: 'Threads: events over time' }));
  const tt = el('table', { id: 'threads' }, el('tr', {}, ...['pid', 'tid', 'name', 'events', 'lost', 'allocated', 'activity']
    .map((h) => el('th', { text: h, class: h === 'name' ? 'name' : '' }))));
  for (const th of D.threads) {
    const s = el('svg:svg', { class: 'act', width: 400, height: 14 });
    const n = th.cols.length;
    th.cols.forEach((lv, i) => {
      if (!lv) return;
      s.append(el('svg:rect', { x: (i * 400) / n, width: 400 / n + 0.5, y: 0, height: 14, fill: `hsl(210,80%,${95 - lv * 0.6}%)` }));
    });
    tt.append(el('tr', {}, el('td', { text: th.pid }), el('td', { text: th.tid }), el('td', { class: 'name', text: th.name }),
      el('td', { text: th.events }), el('td', { text: th.lost }), el('td', { text: bytes(th.alloc_bytes) }), el('td', {}, s)));
  }
  root.append(tt);
  if (D.threads_more) root.append(el('p', { class: 'note', text: D.threads_more + ' more threads not shown (by events)' }));
  root.append(el('p', { class: 'note', text: D.bound }));
  document.body.setAttribute('data-ready', '1');
})();
