/* test_outputs.c - what the commands do to the files they write over (README, "Output
 * files"): trace-run's end-of-run compaction puts the compressed trace in the file the writer
 * opened, or leaves the trace stored with one warning, and never replaces a symlink, a device,
 * a FIFO or a file of several links; a compaction killed leaves nothing beside the trace;
 * trace-dump's outputs (compact, chrome, parquet) leave an existing file as it was when the run
 * fails; parquet -o DIR follows no symlink in DIR and refuses a directory of another user.
 *
 * TRC_TEST_STORE_ALL=1 makes trace-run store every chunk, so that there is a compaction;
 * TRC_TEST_COMPACT_STOP=1 makes it stop itself (SIGSTOP) when the compacted copy is complete and
 * not yet in place (tools/run/run_compact.c), so the test can SIGKILL it there. The tests run as
 * root (chown to 65534 works).
 */
#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "e2e_util.h"
#include "test_stored_util.h" /* tu_count_chunks */

#define TR e2e_path("bin/trace-run")
#define TD e2e_path("bin/trace-dump")
#define EMIT e2e_path("tests/prog_e2e_emit")

static const char out_precious[] = "precious\n";

/* trace-run -o out over prog_e2e_emit 1 20000, every chunk stored (so compacted at the end). */
static struct e2e_run out_record(const char *dir, const char *out)
{
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_run(dir, TR, "--no-progress", "--verbose", "--no-preload", "-o", out,
				   "--", EMIT, "1", "20000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	return r;
}

/* The events a trace holds (its summary must read). */
static int64_t out_events(const char *dir, const char *trace)
{
	char *json = e2e_summary_json(dir, trace);
	int64_t n = e2e_json_int(json, "events_recorded");
	free(json);
	return n;
}

static void out_write(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* The names in dir other than those the e2e helpers make (stdout, stderr, dump, dumptxt),
 * sorted, one a line. */
static char *out_listing(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort);
	cr_assert_geq(n, 0);
	size_t cap = 64, len = 0;
	char *s = calloc(1, cap);
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		if (strcmp(nm, ".") && strcmp(nm, "..") && strcmp(nm, "stdout") &&
		    strcmp(nm, "stderr") && strcmp(nm, "dump") && strcmp(nm, "dumptxt")) {
			size_t k = strlen(nm) + 2;
			if (len + k >= cap) {
				cap = 2 * (len + k);
				s = realloc(s, cap);
			}
			len += (size_t)snprintf(s + len, cap - len, "%s\n", nm);
		}
		free(ents[i]);
	}
	free(ents);
	return s;
}

/* The compaction's warning when it leaves the trace stored. */
static void out_expect_left_stored(const char *err, const char *trace, const char *why)
{
	char want[1200];
	snprintf(want, sizeof(want),
		 "trace-run: warning: could not compress the stored chunks of %s (%s); the trace "
		 "is complete as it is (trace-dump compact can try again)\n",
		 trace, why);
	cr_expect(strstr(err, want), "want\n%s\ngot\n%s", want, err);
}

/* -o a symlink: the link stays the same link, and its target holds the compacted trace. */
Test(outputs, compaction_through_a_symlink_keeps_the_link, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char target[300], link[300], got[300];
	snprintf(target, sizeof(target), "%s/target.trc", dir);
	snprintf(link, sizeof(link), "%s/link.trc", dir);
	cr_assert_eq(symlink("target.trc", link), 0);
	struct e2e_run r = out_record(dir, link);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_null(strstr(r.err, "warning"), "%s", r.err);
	e2e_free(&r);
	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "link.trc is no longer a symlink (mode %o)", st.st_mode);
	ssize_t n = readlink(link, got, sizeof(got) - 1);
	cr_assert_gt(n, 0);
	got[n] = 0;
	cr_expect_str_eq(got, "target.trc");
	unsigned stored, compressed;
	tu_count_chunks(target, &stored, &compressed);
	cr_expect_eq(stored, 0, "target.trc keeps %u stored chunks", stored);
	cr_expect_gt(compressed, 0);
	cr_expect_eq(out_events(dir, target), 20000);
	char *ls = out_listing(dir);
	cr_expect_str_eq(ls, "link.trc\ntarget.trc\n");
	free(ls);
	e2e_rm_rf(dir);
}

/* -o a file with two links: both names keep naming one file, which holds the whole trace
 * (left stored, with the warning saying why). */
Test(outputs, compaction_keeps_hard_links, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char a[300], b[300];
	snprintf(a, sizeof(a), "%s/a.trc", dir);
	snprintf(b, sizeof(b), "%s/b.trc", dir);
	out_write(a, out_precious, 0644);
	cr_assert_eq(link(a, b), 0);
	struct e2e_run r = out_record(dir, a);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	out_expect_left_stored(r.err, a, "it has 2 links: replacing it would part them");
	e2e_free(&r);
	struct stat sa, sb;
	cr_assert_eq(stat(a, &sa), 0);
	cr_assert_eq(stat(b, &sb), 0);
	cr_expect(sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev, "the links were parted");
	cr_expect_eq(sa.st_nlink, 2);
	unsigned stored, compressed;
	tu_count_chunks(b, &stored, &compressed);
	cr_expect_gt(stored, 0);
	cr_expect_eq(out_events(dir, b), 20000);
	e2e_rm_rf(dir);
}

/* The compacted trace keeps the owner, group, mode, extended attributes and ACL of the file it
 * replaces. */
Test(outputs, compaction_keeps_owner_mode_and_acl, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (chown, mknod)");
	const char *dir = e2e_tmpdir();
	char t[300];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	out_write(t, out_precious, 0640);
	cr_assert_eq(chown(t, 65534, 65534), 0);
	cr_assert_eq(setxattr(t, "user.note", "kept", 4, 0), 0, "%s", strerror(errno));
	/* A POSIX ACL (the kernel's xattr form): user::rw- user:65533:r-- group::r-- mask::r--
	 * other::---. */
	struct __attribute__((packed)) {
		uint32_t version;
		struct __attribute__((packed)) {
			uint16_t tag, perm;
			uint32_t id;
		} e[5];
	} acl = {2,
		 {{0x01, 6, UINT32_MAX},
		  {0x02, 4, 65533},
		  {0x04, 4, UINT32_MAX},
		  {0x10, 4, UINT32_MAX},
		  {0x20, 0, UINT32_MAX}}};
	cr_assert_eq(setxattr(t, "system.posix_acl_access", &acl, sizeof(acl), 0), 0, "%s",
		     strerror(errno));
	struct stat before, after;
	cr_assert_eq(stat(t, &before), 0);
	struct e2e_run r = out_record(dir, t);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_null(strstr(r.err, "warning"), "%s", r.err);
	e2e_free(&r);
	cr_assert_eq(stat(t, &after), 0);
	cr_expect_eq(after.st_mode & 07777, 0640, "mode %o", after.st_mode & 07777);
	cr_expect_eq(after.st_uid, 65534);
	cr_expect_eq(after.st_gid, 65534);
	char note[16] = "";
	cr_expect_eq(getxattr(t, "user.note", note, sizeof(note)), 4);
	cr_expect_str_eq(note, "kept");
	uint8_t got[64];
	cr_expect_eq(getxattr(t, "system.posix_acl_access", got, sizeof(got)),
		     (ssize_t)sizeof(acl));
	cr_expect_eq(memcmp(got, &acl, sizeof(acl)), 0, "the ACL changed");
	unsigned stored, compressed;
	tu_count_chunks(t, &stored, &compressed);
	cr_expect_eq(stored, 0);
	cr_expect_eq(out_events(dir, t), 20000);
	e2e_rm_rf(dir);
}

/* -o a character device (a null device of the test's own) and a symlink to it: trace-run
 * writes to it and replaces neither; the compaction says it left the chunks stored. */
Test(outputs, compaction_replaces_no_device, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (chown, mknod)");
	const char *dir = e2e_tmpdir();
	char dev[300], link[300];
	snprintf(dev, sizeof(dev), "%s/null", dir);
	snprintf(link, sizeof(link), "%s/null.trc", dir);
	cr_assert_eq(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0, "%s", strerror(errno));
	cr_assert_eq(symlink("null", link), 0);
	const char *outs[] = {dev, link};
	for (int i = 0; i < 2; i++) {
		struct e2e_run r = out_record(dir, outs[i]);
		cr_expect_eq(r.exit_code, 0, "%s: exit %d: %s", outs[i], r.exit_code, r.err);
		out_expect_left_stored(r.err, outs[i], "not a regular file: left as written");
		e2e_free(&r);
		struct stat st;
		cr_assert_eq(lstat(dev, &st), 0);
		cr_expect(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3), "%s: null replaced",
			  outs[i]);
		cr_assert_eq(lstat(link, &st), 0);
		cr_expect(S_ISLNK(st.st_mode), "%s: the link replaced", outs[i]);
		char *ls = out_listing(dir);
		cr_expect_str_eq(ls, "null\nnull.trc\n");
		free(ls);
	}
	e2e_rm_rf(dir);
}

/* -o a FIFO (with a reader, so that opening it does not wait): it takes no positioned write,
 * so trace-run fails to create the trace, and the FIFO stays a FIFO. */
Test(outputs, a_fifo_output_stays_a_fifo, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char fifo[300];
	snprintf(fifo, sizeof(fifo), "%s/f.trc", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rd, 0);
	struct e2e_run r = out_record(dir, fifo);
	cr_expect_neq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	close(rd);
	struct stat st;
	cr_assert_eq(lstat(fifo, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced (mode %o)", st.st_mode);
	e2e_rm_rf(dir);
}

/* A basename as long as a name may be, less ".trc"'s 4 bytes: the compaction still runs. */
Test(outputs, compaction_of_a_long_basename, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char base[256], t[600];
	memset(base, 'a', 250);
	memcpy(base + 250, ".trc", 5);
	snprintf(t, sizeof(t), "%s/%s", dir, base);
	cr_assert_eq(strlen(base), 254);
	struct e2e_run r = out_record(dir, t);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_null(strstr(r.err, "warning"), "%s", r.err);
	cr_expect(strstr(r.err, "compressed before exit"), "%s", r.err);
	e2e_free(&r);
	unsigned stored, compressed;
	tu_count_chunks(t, &stored, &compressed);
	cr_expect_eq(stored, 0);
	cr_expect_gt(compressed, 0);
	e2e_rm_rf(dir);
}

/* SIGKILL when the compacted copy is complete but not in place: nothing is left beside the
 * trace, which reads whole, stored. */
Test(outputs, a_compaction_killed_leaves_nothing_beside_the_trace, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char sub[300], t[400];
	snprintf(sub, sizeof(sub), "%s/out", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	snprintf(t, sizeof(t), "%s/t.trc", sub);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	setenv("TRC_TEST_COMPACT_STOP", "1", 1);
	char *argv[] = {(char *)TR,
			"--no-progress",
			"--no-preload",
			"-o",
			t,
			"--",
			(char *)EMIT,
			"1",
			"20000",
			NULL};
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	unsetenv("TRC_TEST_STORE_ALL");
	unsetenv("TRC_TEST_COMPACT_STOP");
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st), "trace-run did not stop in the compaction (status %#x)", st);
	kill(pid, SIGKILL);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	cr_expect_eq(r.exit_code, 128 + SIGKILL);
	e2e_free(&r);
	char *ls = out_listing(sub);
	cr_expect_str_eq(ls, "t.trc\n");
	free(ls);
	unsigned stored, compressed;
	tu_count_chunks(t, &stored, &compressed);
	cr_expect_gt(stored, 0);
	cr_expect_eq(out_events(dir, t), 20000);
	e2e_rm_rf(dir);
}

/* -o /dev/stdout, stdout a file: the compacted trace replaces that file and /dev/stdout stays
 * the symlink it is. Run in a mount namespace of its own with a /dev of its own, so that a
 * trace-run that replaced /dev/stdout would replace only that one. */
Test(outputs, compaction_to_dev_stdout_keeps_dev_stdout, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (a mount namespace)");
	const char *dir = e2e_tmpdir();
	char t[300], errp[300], cmd[600];
	snprintf(t, sizeof(t), "%s/so.trc", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	/* The program's own output away from the trace it shares stdout with. */
	snprintf(cmd, sizeof(cmd), "%s 1 20000 >/dev/null", EMIT);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("none", "/dev", "tmpfs", 0, "mode=755") != 0)
			_exit(97);
		if (mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3)) != 0 ||
		    symlink("/proc/self/fd/1", "/dev/stdout") != 0)
			_exit(96);
		pid_t tr = fork();
		if (tr == 0) {
			int o = open(t, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(o, 1);
			dup2(e, 2);
			setenv("TRC_TEST_STORE_ALL", "1", 1);
			execl(TR, TR, "--no-progress", "--no-preload", "-o", "/dev/stdout", "--",
			      "/bin/sh", "-c", cmd, (char *)NULL);
			_exit(99);
		}
		int st = 0;
		if (tr < 0 || waitpid(tr, &st, 0) != tr || !WIFEXITED(st) || WEXITSTATUS(st))
			_exit(95);
		char link[64] = "";
		struct stat ls;
		if (lstat("/dev/stdout", &ls) != 0 || !S_ISLNK(ls.st_mode) ||
		    readlink("/dev/stdout", link, sizeof(link) - 1) <= 0 ||
		    strcmp(link, "/proc/self/fd/1"))
			_exit(10);
		_exit(0);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (code == 97)
		cr_skip_test("no mount namespace here");
	char *err = e2e_slurp(errp);
	cr_expect_eq(code, 0, "status %d (10: /dev/stdout replaced; 95: trace-run failed): %s",
		     code, err);
	cr_expect_null(strstr(err, "warning"), "%s", err);
	free(err);
	unsigned stored, compressed;
	tu_count_chunks(t, &stored, &compressed);
	cr_expect_eq(stored, 0, "so.trc keeps %u stored chunks", stored);
	cr_expect_eq(out_events(dir, t), 20000);
	e2e_rm_rf(dir);
}

/* ---- trace-dump -------------------------------------------------------------------------- */

static void out_expect_file(const char *path, const char *want)
{
	char *got = e2e_slurp(path);
	cr_expect_str_eq(got, want, "%s", path);
	free(got);
}

/* compact FILE -o OUT: a FILE that cannot be read, or is no trace, leaves OUT as it was. */
Test(outputs, a_failed_compact_leaves_its_output_as_it_was, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char keep[300], nosuch[300], bad[300];
	snprintf(keep, sizeof(keep), "%s/keep.txt", dir);
	snprintf(nosuch, sizeof(nosuch), "%s/nosuch.trc", dir);
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	out_write(bad, "not a trace at all, and long enough to have a header's size\n", 0644);
	const char *ins[] = {nosuch, bad};
	for (int i = 0; i < 2; i++) {
		out_write(keep, out_precious, 0640);
		struct e2e_run r = e2e_run(dir, TD, "compact", ins[i], "-o", keep, NULL);
		cr_expect_eq(r.exit_code, 1, "%s: exit %d: %s", ins[i], r.exit_code, r.err);
		cr_expect(strstr(r.err, ins[i]), "%s", r.err);
		e2e_free(&r);
		out_expect_file(keep, out_precious);
	}
	/* And a new OUT is not made. */
	char fresh[300];
	snprintf(fresh, sizeof(fresh), "%s/fresh.trc", dir);
	struct e2e_run r = e2e_run(dir, TD, "compact", nosuch, "-o", fresh, NULL);
	cr_expect_eq(r.exit_code, 1);
	e2e_free(&r);
	cr_expect_neq(access(fresh, F_OK), 0, "%s made", fresh);
	char *ls = out_listing(dir);
	cr_expect_str_eq(ls, "bad.trc\nkeep.txt\n");
	free(ls);
	e2e_rm_rf(dir);
}

/* compact into an existing file keeps its mode; through a symlink, the link stays. */
Test(outputs, compact_over_a_file_keeps_its_mode_and_links, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char t[300], keep[300], link[300];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	snprintf(keep, sizeof(keep), "%s/out.trc", dir);
	snprintf(link, sizeof(link), "%s/link.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--no-preload", "--keep-stored", "-o", t, "--",
				   EMIT, "1", "20000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	out_write(keep, out_precious, 0640);
	cr_assert_eq(symlink("out.trc", link), 0);
	r = e2e_run(dir, TD, "compact", t, "-o", link, NULL);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_expect(S_ISLNK(st.st_mode));
	cr_assert_eq(stat(keep, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	unsigned stored, compressed;
	tu_count_chunks(keep, &stored, &compressed);
	cr_expect_eq(stored, 0);
	cr_expect_eq(out_events(dir, keep), 20000);
	e2e_rm_rf(dir);
}

/* chrome -o OUT failing half-way (the test hook of dump_chrome.c) leaves OUT as it was. */
Test(outputs, a_failed_export_leaves_its_output_as_it_was, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char t[300], keep[300];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	snprintf(keep, sizeof(keep), "%s/keep.json", dir);
	struct e2e_run r =
		e2e_run(dir, TR, "-q", "--no-preload", "-o", t, "--", EMIT, "1", "2000", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	out_write(keep, out_precious, 0600);
	setenv("TRC_TEST_CHROME_FAIL_AFTER", "100", 1);
	r = e2e_run(dir, TD, "chrome", t, "-o", keep, NULL);
	unsetenv("TRC_TEST_CHROME_FAIL_AFTER");
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	out_expect_file(keep, out_precious);
	/* It succeeding replaces it. */
	r = e2e_run(dir, TD, "chrome", t, "-o", keep, NULL);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	char *got = e2e_slurp(keep);
	cr_expect_eq(strncmp(got, "{\"traceEvents\":[", 16), 0, "%.40s", got);
	free(got);
	e2e_rm_rf(dir);
}

/* A read-only OUT in a directory the user may write in: refused as open(2) would refuse it,
 * not renamed over (uid 65534's file and directory, trace-dump run as 65534). */
Test(outputs, a_read_only_output_is_not_replaced, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (setuid)");
	const char *dir = e2e_tmpdir();
	char t[300], keep[300], errp[300];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	snprintf(keep, sizeof(keep), "%s/ro.json", dir);
	snprintf(errp, sizeof(errp), "%s/ro.err", dir);
	struct e2e_run r =
		e2e_run(dir, TR, "-q", "--no-preload", "-o", t, "--", EMIT, "1", "200", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	out_write(keep, out_precious, 0444);
	cr_assert_eq(chown(keep, 65534, 65534), 0);
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	cr_assert_eq(chmod(t, 0644), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		dup2(e, 2);
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(97);
		execl(TD, TD, "chrome", t, "-o", keep, (char *)NULL);
		_exit(99);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	char *err = e2e_slurp(errp);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x: %s", st, err);
	char want[400];
	snprintf(want, sizeof(want), "trace-dump: %s: Permission denied\n", keep);
	cr_expect_str_eq(err, want);
	free(err);
	out_expect_file(keep, out_precious);
	struct stat ks;
	cr_assert_eq(stat(keep, &ks), 0);
	cr_expect_eq(ks.st_mode & 07777, 0444);
	e2e_rm_rf(dir);
}

/* A small trace for the parquet tests. */
static void out_small_trace(const char *dir, const char *t)
{
	struct e2e_run r =
		e2e_run(dir, TR, "-q", "--no-preload", "-o", t, "--", EMIT, "1", "200", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
}

static const char *const out_tables[] = {"spans",  "events", "allocations",
					 "rss",    "traces", "processes"};

/* parquet -o DIR failing (a FILE that is no trace, a table that cannot be written) leaves
 * every table DIR held as it was. */
Test(outputs, a_failed_parquet_leaves_the_tables_as_they_were, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char t[300], nosuch[300], tables[300], p[400];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	snprintf(nosuch, sizeof(nosuch), "%s/nosuch.trc", dir);
	snprintf(tables, sizeof(tables), "%s/tables", dir);
	out_small_trace(dir, t);
	cr_assert_eq(mkdir(tables, 0755), 0);
	for (int i = 0; i < (int)(sizeof(out_tables) / sizeof(out_tables[0])); i++) {
		snprintf(p, sizeof(p), "%s/%s.parquet", tables, out_tables[i]);
		out_write(p, out_tables[i], 0644);
	}
	struct e2e_run r = e2e_run(dir, TD, "parquet", "-o", tables, t, nosuch, NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	for (int i = 0; i < (int)(sizeof(out_tables) / sizeof(out_tables[0])); i++) {
		snprintf(p, sizeof(p), "%s/%s.parquet", tables, out_tables[i]);
		out_expect_file(p, out_tables[i]);
	}
	/* rss.parquet a directory: that table cannot be written, and no other changes. */
	snprintf(p, sizeof(p), "%s/rss.parquet", tables);
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(mkdir(p, 0755), 0);
	r = e2e_run(dir, TD, "parquet", "-o", tables, t, NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "rss.parquet"), "%s", r.err);
	e2e_free(&r);
	for (int i = 0; i < (int)(sizeof(out_tables) / sizeof(out_tables[0])); i++) {
		if (i == 3)
			continue;
		snprintf(p, sizeof(p), "%s/%s.parquet", tables, out_tables[i]);
		out_expect_file(p, out_tables[i]);
	}
	char *ls = out_listing(tables);
	cr_expect_str_eq(ls, "allocations.parquet\nevents.parquet\nprocesses.parquet\nrss.parquet\n"
			     "spans.parquet\ntraces.parquet\n");
	free(ls);
	e2e_rm_rf(dir);
}

/* A symlink planted in DIR is replaced by the table, not followed. */
Test(outputs, parquet_follows_no_symlink_in_its_directory, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char t[300], tables[300], victim[300], p[400];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	snprintf(tables, sizeof(tables), "%s/tables", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	out_small_trace(dir, t);
	out_write(victim, out_precious, 0644);
	cr_assert_eq(mkdir(tables, 0755), 0);
	snprintf(p, sizeof(p), "%s/spans.parquet", tables);
	cr_assert_eq(symlink("../victim", p), 0);
	struct e2e_run r = e2e_run(dir, TD, "parquet", "-o", tables, t, NULL);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	out_expect_file(victim, out_precious);
	struct stat st;
	cr_assert_eq(lstat(p, &st), 0);
	cr_expect(S_ISREG(st.st_mode), "spans.parquet is not a regular file (mode %o)", st.st_mode);
	char *got = e2e_slurp(p);
	cr_expect_eq(strncmp(got, "PAR1", 4), 0);
	free(got);
	e2e_rm_rf(dir);
}

/* A directory another user owns is refused: one line, exit 1, nothing written in it. */
Test(outputs, parquet_refuses_a_directory_of_another_user, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (chown, mknod)");
	const char *dir = e2e_tmpdir();
	char t[300], tables[300], want[600];
	snprintf(t, sizeof(t), "%s/t.trc", dir);
	snprintf(tables, sizeof(tables), "%s/tables", dir);
	out_small_trace(dir, t);
	cr_assert_eq(mkdir(tables, 0777), 0);
	cr_assert_eq(chmod(tables, 0777), 0);
	cr_assert_eq(chown(tables, 65534, 65534), 0);
	struct e2e_run r = e2e_run(dir, TD, "parquet", "-o", tables, t, NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	snprintf(want, sizeof(want),
		 "trace-dump: %s: the directory belongs to uid 65534, not to you (uid %u): "
		 "give a directory of your own\n",
		 tables, (unsigned)geteuid());
	cr_expect_str_eq(r.err, want);
	e2e_free(&r);
	char *ls = out_listing(tables);
	cr_expect_str_eq(ls, "");
	free(ls);
	e2e_rm_rf(dir);
}
