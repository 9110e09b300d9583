// duckdb_check.mjs - the DuckDB tier: a real query engine reads `trace-dump parquet` output and
// its figures must agree with `trace-dump summary --json`, exactly where the summary is exact.
//
// Usage: node tests/duckdb_check.mjs BUILD_DIR MODULES_DIR
//   BUILD_DIR    the build (build/bin/trace-run, trace-dump, build/tests/prog_*)
//   MODULES_DIR  where `npm install @duckdb/node-api` put node_modules (make test-duckdb)
//
// It records four traces of different programs (prog_demo: threads, spans, allocations, RSS;
// prog_e2e_emit: 30 000 spans and instants; prog_finst_calls: function entry/exit;
// prog_crossed_spans: crossed spans, FORMAT.md's span rule), exports
// them together with a small row-group size (so every table has several row groups), and checks
// per trace: the traces row (events recorded and lost, records, duration, exact RSS peak and its
// source, allocations), event counts per kind, span count/total/max per name, allocation counts
// and bytes, RSS sample count/min/peak, that timestamps lie on CLOCK_REALTIME inside each
// trace's run, and that every column chunk has statistics. Then it runs the README's DuckDB
// queries (section "Many hosts") as written there, on these tables.
// Prints one line per check group; exits 1 on the first mismatch (with both figures).
//
// Timestamps: DuckDB reads TIMESTAMP(NANOS, UTC) as TIMESTAMP WITH TIME ZONE in microseconds,
// so time points are compared at microsecond precision (epoch_us); durations (dur_ns,
// duration_ns) are plain INT64 and compared exactly.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

const [build, modules] = process.argv.slice(2).map((p) => (p ? resolve(p) : p));
if (!build || !modules) {
  console.error('usage: node tests/duckdb_check.mjs BUILD_DIR MODULES_DIR');
  process.exit(2);
}
const req = createRequire(join(modules, 'node_modules') + '/');
const { DuckDBInstance } = await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);

const dir = mkdtempSync(join(tmpdir(), 'trc-duckdb-'));
let failed = false;
function fail(msg) {
  console.error('FAIL: ' + msg);
  failed = true;
}
function eq(what, got, want) {
  const g = got === null || got === undefined ? 'null' : String(got);
  const w = want === null || want === undefined ? 'null' : String(want);
  if (g !== w) fail(`${what}: DuckDB says ${g}, summary --json says ${w}`);
}

// JSON with 64-bit integers kept exact: long numbers become strings before parsing.
function json64(text) {
  return JSON.parse(text.replace(/([:\[,])(-?\d{15,})(?=[,\]}])/g, '$1"$2"'));
}

const run = (bin, args, opts = {}) =>
  execFileSync(join(build, bin), args, { encoding: 'utf8', maxBuffer: 1 << 28, ...opts });

try {
  const traces = [
    { file: 'demo.trc', argv: ['tests/prog_demo'] },
    { file: 'emit.trc', argv: ['tests/prog_e2e_emit', '3', '10001'] },
    { file: 'fib.trc', argv: ['tests/prog_finst_calls', '18'] },
    // FORMAT.md's span rule: crossed spans and an end of another name (spans named by begin)
    { file: 'crossed.trc', argv: ['tests/prog_crossed_spans', '20'] },
  ];
  for (const t of traces) {
    run('bin/trace-run', ['-q', '-o', join(dir, t.file), '--', join(build, t.argv[0]), ...t.argv.slice(1)]);
    t.sum = json64(run('bin/trace-dump', ['summary', '--json', join(dir, t.file)]));
  }
  const out = join(dir, 'tables');
  run('bin/trace-dump', ['parquet', '--rows-per-group', '5000', '-o', out,
    ...traces.map((t) => join(dir, t.file))]);

  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
  const tbl = (name) => `read_parquet('${join(out, name + '.parquet')}')`;

  for (const t of traces) {
    const s = t.sum;
    const tr = `trace = '${t.file}'`;
    // traces: one row, the summary's own figures
    const rows = await q(`select * exclude (start_ns), epoch_us(start_ns) as start_us from ${tbl('traces')} where ${tr}`);
    eq(`${t.file}: traces rows`, rows.length, 1);
    const r = rows[0];
    for (const k of ['events_recorded', 'events_lost', 'records', 'duration_ns', 'allocs', 'alloc_bytes', 'pid', 'rss_peak_source'])
      eq(`${t.file}: traces.${k}`, r[k], s[k]);
    eq(`${t.file}: traces.rss_peak_bytes`, r.rss_peak_bytes, s.rss_peak_source === 'none' ? null : s.rss_peak_bytes);
    eq(`${t.file}: traces.start_ns (us)`, r.start_us, BigInt(s.start_realtime_ns) / 1000n);
    eq(`${t.file}: traces.host`, r.host, s.host.split(' ')[0]);

    // events per kind
    const kinds = Object.fromEntries((await q(
      `select kind, count(*) n, sum(value) v from ${tbl('events')} where ${tr} group by kind`))
      .map((x) => [x.kind, x]));
    const bt = s.records_by_type;
    for (const [k, want] of [['instant', bt.instant], ['counter', bt.counter], ['func_enter', bt.func_enter], ['func_exit', bt.func_exit], ['lost', bt.lost]])
      eq(`${t.file}: events of kind ${k}`, kinds[k] ? kinds[k].n : 0, want);
    const lost = await q(`select coalesce(sum(value), 0) v from ${tbl('events')} where ${tr} and kind = 'lost' and name <> 'sampler_late'`);
    eq(`${t.file}: lost events`, lost[0].v, s.events_lost);

    // spans per name: count, total and longest duration, exact
    const spans = Object.fromEntries((await q(
      `select name, count(*) n, sum(dur_ns) total, max(dur_ns) mx from ${tbl('spans')} where ${tr} group by name`))
      .map((x) => [x.name, x]));
    let nspans = 0;
    for (const n of s.names) {
      if (!Number(n.spans)) continue;
      nspans++;
      const g = spans[n.name] || { n: 0, total: 0, mx: 0 };
      eq(`${t.file}: spans of ${n.name}`, g.n, n.spans);
      eq(`${t.file}: total ns of ${n.name}`, g.total, n.span_total_ns);
      eq(`${t.file}: longest ${n.name}`, g.mx, n.span_max_ns);
    }
    eq(`${t.file}: span names`, Object.keys(spans).length, nspans);

    // functions: entered under the names the summary gives them (symbols, not module+offset)
    const fns = Object.fromEntries((await q(
      `select name, count(*) n from ${tbl('events')} where ${tr} and kind = 'func_enter' group by name`))
      .map((x) => [x.name, x]));
    for (const f of s.functions || []) {
      const g = fns[f.name];
      if (!g) {
        fail(`${t.file}: function ${f.name} of the summary has no func_enter rows; the table names ${Object.keys(fns).join(', ')}`);
        continue;
      }
      if (BigInt(g.n) < BigInt(f.calls))
        fail(`${t.file}: function ${f.name}: ${g.n} func_enter rows, fewer than its ${f.calls} calls`);
    }
    // the summary's rows are per process: the same name in two processes is one name here
    eq(`${t.file}: function names`, Object.keys(fns).length, new Set((s.functions || []).map((f) => f.name)).size);

    // allocations
    const al = Object.fromEntries((await q(
      `select kind, count(*) n, sum(size) b, count(*) - count(size) as unknown_n from ${tbl('allocations')} where ${tr} group by kind`))
      .map((x) => [x.kind, x]));
    eq(`${t.file}: allocs`, al.alloc ? al.alloc.n : 0, s.allocs);
    eq(`${t.file}: alloc bytes`, al.alloc ? al.alloc.b : 0, s.alloc_bytes);
    eq(`${t.file}: frees`, al.free ? al.free.n : 0, s.frees);
    if (!s.live_approximate) {
      eq(`${t.file}: freed bytes`, al.free ? al.free.b || 0 : 0, s.free_bytes);
      eq(`${t.file}: frees of unknown addresses`, al.free ? al.free.unknown_n : 0, s.frees_unknown);
    }

    // allocations' call stacks: every stack_id has its frames in stacks, depth 0 is named,
    // and the bytes by the innermost function add up to those allocated with a stack
    const st = (await q(
      `select count(*) n, count(*) filter (where s.stack_id is null) dangling, coalesce(sum(a.size), 0) b
       from (select * from ${tbl('allocations')} where ${tr} and kind = 'alloc' and stack_id is not null) a
       left join (select * from ${tbl('stacks')} where ${tr} and depth = 0) s
       on a.stack_id = s.stack_id and a.pid = s.pid`))[0];
    eq(`${t.file}: allocations whose stack has no rows`, st.dangling, 0);
    const byFn = (await q(
      `select coalesce(sum(b), 0) b, count(*) filter (where fn = '') unnamed from
       (select s.function fn, sum(a.size) b
        from (select * from ${tbl('allocations')} where ${tr} and kind = 'alloc') a
        join (select * from ${tbl('stacks')} where ${tr} and depth = 0) s
        on a.stack_id = s.stack_id and a.pid = s.pid group by s.function)`))[0];
    eq(`${t.file}: bytes by innermost function`, byFn.b, st.b);
    eq(`${t.file}: innermost frames without a name`, byFn.unnamed, 0);
    if (Number(s.allocs) && Number(st.n) === 0)
      fail(`${t.file}: ${s.allocs} allocations and none with a call stack`);

    // RSS of the traced program (the header's pid), buffers excluded
    const rss = (await q(
      `select count(*) n, min(program_bytes) lo, max(program_bytes) hi from ${tbl('rss')} where ${tr} and pid = ${s.pid}`))[0];
    eq(`${t.file}: rss samples`, rss.n, s.rss_samples);
    if (Number(s.rss_samples)) {
      eq(`${t.file}: rss sampled peak`, rss.hi, s.rss_peak_sampled_bytes);
      eq(`${t.file}: rss sampled min`, rss.lo, s.rss_sampled_min_bytes);
    }

    // processes: one row per process of the tree, the summary's figures
    const procs = Object.fromEntries((await q(
      `select * from ${tbl('processes')} where ${tr}`)).map((x) => [String(x.pid), x]));
    eq(`${t.file}: processes rows`, Object.keys(procs).length, s.processes.length);
    for (const p of s.processes) {
      const g = procs[String(p.pid)];
      if (!g) {
        fail(`${t.file}: process ${p.pid} of the summary has no row`);
        continue;
      }
      eq(`${t.file}: pid ${p.pid} ppid`, g.ppid, p.ppid || null);
      eq(`${t.file}: pid ${p.pid} command`, g.command, p.command ? p.command.join(' ') : null);
      eq(`${t.file}: pid ${p.pid} peak_source`, g.peak_source, p.rss_peak_source);
      eq(`${t.file}: pid ${p.pid} peak_low_bytes`, g.peak_low_bytes, p.rss_peak_source === 'none' ? null : p.rss_peak_bytes);
      eq(`${t.file}: pid ${p.pid} peak_high_bytes`, g.peak_high_bytes, p.rss_peak_source === 'none' ? null : p.rss_peak_high_bytes);
      eq(`${t.file}: pid ${p.pid} rss_samples`, g.rss_samples, p.rss_samples);
      eq(`${t.file}: pid ${p.pid} rss_sampled_max_bytes`, g.rss_sampled_max_bytes, p.rss_sampled_max_bytes);
    }

    // CLOCK_REALTIME: every time point of the trace lies inside its run
    const start = BigInt(s.start_realtime_ns) / 1000n;
    const end = (BigInt(s.start_realtime_ns) + BigInt(s.duration_ns)) / 1000n + 1n;
    for (const [table, col] of [['events', 'ts_ns'], ['spans', 'start_ns'], ['allocations', 'ts_ns'], ['rss', 'ts_ns']]) {
      const b = (await q(`select count(*) n, min(epoch_us(${col})) lo, max(epoch_us(${col})) hi from ${tbl(table)} where ${tr}`))[0];
      if (Number(b.n) && (BigInt(b.lo) < start || BigInt(b.hi) > end))
        fail(`${t.file}: ${table}.${col} from ${b.lo} to ${b.hi} us, outside the run ${start}..${end}`);
    }
    console.log(`ok ${t.file}: ${s.events_recorded} events, ${nspans} span names, ${s.allocs} allocs, ${s.rss_samples} rss samples agree with summary --json`);
  }

  // Statistics on every column chunk that holds a value, and several row groups.
  for (const table of ['spans', 'events', 'allocations', 'rss', 'traces', 'processes', 'stacks']) {
    const m = (await q(
      `select count(distinct row_group_id) as n_groups, count(*) filter (where stats_min_value is null and stats_null_count < num_values) as nostats,
              count(*) filter (where compression <> 'ZSTD') as plain
       from parquet_metadata('${join(out, table + '.parquet')}')`))[0];
    eq(`${table}: column chunks with values but no min/max`, m.nostats, 0);
    eq(`${table}: column chunks not zstd-compressed`, m.plain, 0);
    console.log(`ok ${table}.parquet: ${m.n_groups} row groups, statistics and zstd on every column chunk`);
  }
  const groups = (await q(`select count(distinct row_group_id) g from parquet_metadata('${join(out, 'allocations.parquet')}')`))[0];
  if (Number(groups.g) < 2) fail(`allocations.parquet has ${groups.g} row group(s); --rows-per-group 5000 should give several`);

  // The README's DuckDB queries, as written there ("Many hosts"), on these tables.
  const readmeText = readFileSync(join(here, '..', 'README.md'), 'utf8');
  const block = readmeText.match(/```sql\n-- duckdb\n([\s\S]*?)```/);
  if (!block) fail('README.md has no ```sql block starting with "-- duckdb"');
  else {
    const stmts = block[1].split(';').map((x) => x.replace(/--.*$/gm, '').trim()).filter((x) => x);
    for (const sql of stmts) {
      const rows = await q(sql.replaceAll('fleet/*/', out + '/'));
      if (!rows.length) fail(`the README query returned no rows: ${sql}`);
      else console.log(`ok README query (${rows.length} rows): ${sql.split('\n')[0]}`);
    }
  }
} catch (e) {
  fail(e.stack || String(e));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (failed) process.exit(1);
console.log('test-duckdb: all checks passed');
