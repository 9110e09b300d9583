/* test_chrome_slicing.c - `trace-dump chrome` --from/--to, -o and --split-size.
 *
 * Purpose: the time and size slicing of the JSON export (issue 15 item 2). A range keeps the
 * events inside it, closes what is open at --to and drops ends whose begins it cut off; split
 * files are each strict JSON, balanced, and together hold every span once with durations
 * adding up (checked by Python's json module against `trace-dump summary --json`).
 * Threads: each test is one process (Criterion); the commands run as children.
 */
#include <criterion/criterion.h>
#include <sys/wait.h>

#include "test_trcfile_util.h"

/* The checker: argv = summary.json file...; prints begins per name, ok. */
static const char tc_check[] =
	"import json,sys,collections\n"
	"summ=json.load(open(sys.argv[1]))\n"
	"begins=collections.Counter(); total=collections.Counter(); prev_last=None\n"
	"prev_split=0\n"
	"for i,f in enumerate(sys.argv[2:]):\n"
	"  ev=json.load(open(f))['traceEvents']\n"
	"  stacks=collections.defaultdict(list); split=cont=0\n"
	"  ts=[e['ts'] for e in ev if e['ph']!='M']\n"
	"  if prev_last is not None: assert min(ts)>=prev_last, (f,min(ts),prev_last)\n"
	"  prev_last=max(ts)\n"
	"  for e in ev:\n"
	"    k=(e['pid'],e['tid']); a=e.get('args',{})\n"
	"    if e['ph']=='B':\n"
	"      stacks[k].append(e)\n"
	"      if a.get('continued'): cont+=1\n"
	"      else: begins[e['name']]+=1\n"
	"    if e['ph']=='E':\n"
	"      b=stacks[k].pop()\n"
	"      assert e['name']==b['name'], (f,e,b)\n"
	"      if a.get('split'): split+=1\n"
	"      if not a.get('unfinished'): total[b['name']]+=round((e['ts']-b['ts'])*1000)\n"
	"  assert all(not s for s in stacks.values()), f\n"
	"  assert cont==prev_split, (f,cont,prev_split)\n"
	"  prev_split=split\n"
	"for n in summ['names']:\n"
	"  if n['begins']:\n"
	"    assert begins[n['name']]==n['begins'], (n['name'],begins[n['name']],n)\n"
	"    assert total[n['name']]==n['span_total_ns'], (n['name'],total[n['name']],n)\n"
	"print('ok', len(sys.argv)-2, dict(begins))\n";

Test(chrome_slicing, split_size_files_are_whole_and_add_up, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 9, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 9, 9);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 9, 10);
	static const char *const nm[] = {"", "outer", "inner"};
	for (uint32_t i = 1; i < 3; i++)
		tu_add_name(&p.streams[0], i, nm[i], 1000000000);
	for (int s = 1; s <= 2; s++) {
		uint64_t t = 1000000000ull + (uint64_t)s;
		struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
		r.span.name_id = 1;
		tu_add(&p.streams[s], &r);
		for (int i = 0; i < 20000; i++) {
			r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 90};
			r.span.name_id = 2;
			tu_add(&p.streams[s], &r);
			r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 40 + i % 7};
			r.span.name_id = 2;
			tu_add(&p.streams[s], &r);
		}
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(&p.streams[s], &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 1000), 0);
	tu_plan_free(&p);
	const char *td = tu_build();
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome --split-size 1M -o '%s/out.json' '%s'", td,
			   dir, trc),
		     0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary --json '%s' > '%s/sum.json'", td, trc, dir),
		     0);
	char py[400];
	snprintf(py, sizeof(py), "%s/check.py", dir);
	tu_write_file(py, tc_check, strlen(tc_check));
	int rc = tu_sh("python3 '%s' '%s/sum.json' '%s'/out-0*.json > '%s/check' 2>&1", py, dir,
		       dir, dir);
	char *rep = tu_slurp_text(dir, "check");
	cr_assert_eq(rc, 0, "%s", rep);
	cr_assert(strstr(rep, "'outer': 2, 'inner': 40000"), "%s", rep);
	unsigned files = 0;
	cr_assert_eq(sscanf(rep, "ok %u", &files), 1);
	cr_assert_geq(files, 3, "%s", rep);
	free(rep);
	/* A split needs files. */
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump chrome --split-size 1M '%s' >/dev/null 2>&1", td, trc), 2);
	tu_rm_rf(dir);
}

/* --from/--to on the small trace: parse begins at 1100, 1460, 2020 ns; from 1200 to 2100
 * keeps the last two; the second ends at 1910, the third is closed at --to as unfinished;
 * the end of the first (1350) is dropped (its begin is cut off), as are main and compute
 * (begun before --from). */
Test(chrome_slicing, from_to_keep_the_range, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 3), 0);
	tu_plan_free(&p);
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome --from 1200ns --to 2100ns -o '%s/cut.json' "
			   "'%s'",
			   tu_build(), dir, trc),
		     0);
	int rc = tu_sh("python3 -c \"import json,sys\n"
		       "ev=json.load(open(sys.argv[1]))['traceEvents']\n"
		       "b=[(e['name'],e['ts']) for e in ev if e['ph']=='B']\n"
		       "E=[e for e in ev if e['ph']=='E']\n"
		       "assert b==[('parse',1.46),('parse',2.02)], b\n"
		       "assert [(e['ts'],e.get('args')) for e in E]=="
		       "[(1.91,None),(2.1,{'unfinished':True})], E\n"
		       "assert all(1.2<=e['ts']<=2.1 for e in ev if e['ph']!='M'), ev\n"
		       "print(len(b), len(E))\" '%s/cut.json' > '%s/out' 2>&1",
		       dir, dir);
	char *out = tu_slurp_text(dir, "out");
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome --from 2s --to 1s '%s' 2>/dev/null",
			   tu_build(), trc),
		     2);
	tu_rm_rf(dir);
}
