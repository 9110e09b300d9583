/* run_main.c - trace-run: run a command and record its events and RSS into one trace file.
 *
 * Order of things, and why:
 *   0. put /dev/null on closed descriptors 0-2, so none of trace-run's own lands there (the
 *      program gets them closed again: run_spawn.h);
 *   1. parse the whole command line (a usage error starts nothing);
 *   2. block the signals trace-run handles, so every thread it starts inherits the mask and
 *      they arrive only through the signalfd of the main loop;
 *   3. create the session region (a sparse memfd: it costs no memory yet) and fork the child
 *      while trace-run is small (the child's ru_maxrss starts from the spawner's);
 *   4. create the trace file and start the recorder (sampler + drain threads); on failure
 *      the child is told to exit before it ever runs the command, and is reaped;
 *   5. let the child exec; report 127/126 when exec failed;
 *   6. wait for the child. One external signal, however it was addressed, reaches the
 *      program once and counts once: one sent to trace-run alone (kill PID) is passed on;
 *      one sent to the process group the program is also in (Ctrl-C from the terminal,
 *      kill -TERM -PGID, coreutils timeout, which signals trace-run and then the group)
 *      reached it already and is not; the group witness tells the two apart
 *      (run_witness.h), and the same signal from the same sender within RUN_ONE_SIGNAL_NS
 *      is the same event. A second SIGINT or SIGTERM within RUN_ESCALATE_WINDOW_NS of the
 *      previous one finalizes at once (the child, and its process group when it has its own,
 *      is killed so it is not left behind); one further apart is just another interrupt for
 *      the program, unless the program is still running RUN_TERM_GRACE_NS after a SIGTERM
 *      (stuck: finalizes at once);
 *   7. unless --no-follow, wait for the rest of the process tree the command started
 *      (run_follow.h: trace-run is its subreaper), until its last process exits or an
 *      interrupt ends the recording;
 *   8. finish the recorder (last drain, exit record), close the file, report one line and
 *      exit with the command's own status.
 * Threads: only main() runs here; the recorder's threads live in src/recorder/recorder.c.
 * Processes: the program, and the witness (forked at step 2, before anything else is open).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_bytes.h"
#include "cli_plural.h"
#include "cli_version.h"
#include "recorder.h"
#include "run_compact.h"
#include "chunk_bgc.h"
#include "run_follow.h"
#include "run_guard.h"
#include "run_options.h"
#include "run_spawn.h"
#include "run_witness.h"
#include "session.h"
#include "trcfile.h"
#include "peak.h"

/* The last line's peak: the program's by trace-dump summary's rule (peak_of), from the
 * same figures (its own VmHWM and buffers figure, else wait4's unless a descendant's own peak
 * reaches it, with the buffers' most the exit record says; its largest sample and sampled
 * buffers' share), and, when another process of the tree peaked higher, that one too, from
 * its own figures as the summary's row of it takes them, printed alike. A figure that is not
 * believed is said so. Once the recorder has finished (the drain wrote what
 * session_self_hwm reads). */
static void run__peak_text(const struct recorder_stats *st, uint64_t wait_maxrss,
			   struct trc_session *session, pid_t program, char *buf, size_t len)
{
	struct session_self_hwm h;
	session_self_hwm(session, program, PEAK_PLAUSIBLE_BYTES, &h);
	const struct peak_figures pf = {
		.self_hwm_bytes = h.own_bytes,
		.self_buffers_bytes = h.own_buffers_bytes,
		.wait_maxrss_bytes = wait_maxrss,
		.wait_buffers_bytes = st->buffers_peak_bytes, /* what its exit record says */
		/* A process whose own figure is refused may be the one wait4's is of. */
		.others_hwm_bytes = h.refused_pid ? UINT64_MAX : h.others_bytes,
		.samples = st->rss_samples,
		.sampled_max_bytes = st->rss_sampled_max_bytes,
		.sampled_buffers_max_bytes = h.own_sampled_buffers_max_bytes,
	};
	const struct peak pk = peak_of(&pf);
	char prog[80], other[80], name[SESSION_PROC_NAME_BYTES], doubt[160], refused[160] = "";
	char rb[32];
	if (pk.source == PEAK_NONE) /* as the summary says it */
		snprintf(prog, sizeof(prog), "unknown");
	else
		cli_fmt_bytes_range(prog, sizeof(prog), pk.low_bytes, pk.high_bytes);
	cli_fmt_peak_doubt(doubt, sizeof(doubt), (pk.bounded & PEAK_HWM_REFUSED) != 0,
			   pk.refused_bytes, (pk.bounded & PEAK_BUFFERS_BOUNDED) != 0);
	if (h.refused_pid)
		snprintf(refused, sizeof(refused),
			 "; pid %d gave a high-water mark of %s: not believed", (int)h.refused_pid,
			 cli_fmt_bytes(rb, sizeof(rb), h.refused_bytes));
	int n = snprintf(buf, len, "%s (trace buffers excluded%s%s%s", prog, doubt[0] ? "; " : "",
			 doubt, refused);
	if (n < 0 || (size_t)n >= len)
		return;
	if (h.others_bytes <= pk.high_bytes) {
		snprintf(buf + n, len - (size_t)n, ")");
		return;
	}
	const struct peak_figures of = {
		.self_hwm_bytes = h.others_bytes,
		.self_buffers_bytes = h.others_buffers_bytes,
		.samples = h.others_sampled_max_bytes || h.others_sampled_buffers_max_bytes,
		.sampled_max_bytes = h.others_sampled_max_bytes,
		.sampled_buffers_max_bytes = h.others_sampled_buffers_max_bytes,
	};
	const struct peak o = peak_of(&of);
	cli_fmt_bytes_range(other, sizeof(other), o.low_bytes, o.high_bytes);
	cli_fmt_peak_doubt(doubt, sizeof(doubt), (o.bounded & PEAK_HWM_REFUSED) != 0,
			   o.refused_bytes, (o.bounded & PEAK_BUFFERS_BOUNDED) != 0);
	session_process_name(session, h.others_pid, name, sizeof(name));
	snprintf(buf + n, len - (size_t)n, "; pid %d%s%s%s of its tree reached %s%s%s)",
		 (int)h.others_pid, name[0] ? " (" : "", name, name[0] ? ")" : "", other,
		 doubt[0] ? ": " : "", doubt);
}

/* The smallest --buffer-size, and the fewest ring slots a session is sized down to. */
#define RUN_FIT_MIN_RING_BYTES (64ull << 10)
#define RUN_FIT_MIN_SLOTS 16u

/* Fits the session to a file size limit (room, in bytes; RLIM_INFINITY: none): its memfd's
 * length counts against RLIMIT_FSIZE although the rings are sparse and cost memory only as
 * they are written. Halves the ring size, then the ring slots, that the user left at their
 * defaults, down to RUN_FIT_MIN_RING_BYTES and RUN_FIT_MIN_SLOTS, until the region fits.
 * Returns false when it cannot (cfg then holds the smallest it tried). */
static bool run__fit_session(struct session_config *cfg, const struct run_options *opt, rlim_t room)
{
	if (room == RLIM_INFINITY)
		return true;
	while (session_region_bytes(cfg) > (uint64_t)room) {
		if (!opt->buffer_bytes_given && cfg->ring_bytes > RUN_FIT_MIN_RING_BYTES)
			cfg->ring_bytes /= 2;
		else if (!opt->max_threads_given && cfg->max_slots > RUN_FIT_MIN_SLOTS)
			cfg->max_slots /= 2;
		else
			return false;
	}
	return true;
}

/* argv joined by NUL bytes, as the header stores it. */
static char *run__join_argv(char **argv, uint32_t *len_out)
{
	size_t len = 0;
	for (char **a = argv; *a; a++)
		len += strlen(*a) + 1;
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	size_t off = 0;
	for (char **a = argv; *a; a++) {
		size_t l = strlen(*a) + 1;
		memcpy(buf + off, *a, l);
		off += l;
	}
	*len_out = (uint32_t)(len ? len - 1 : 0);
	return buf;
}

static char *run__default_output(const char *cmd, pid_t pid)
{
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	if (!*base)
		base = "trace";
	size_t len = strlen(base) + 32;
	char *out = malloc(len);
	if (out)
		snprintf(out, len, "%s.%d.trc", base, (int)pid);
	return out;
}

/* How the program ended, for the report line: "program exited with status 3", "program killed
 * by signal 11 (Segmentation fault, core dumped)". 127 and 126 are what a shell, or the dynamic
 * loader, exit with when the command itself could not be run (not found, a shared library
 * missing, not executable): those are not reported as if the program had run. */
static void run__how_it_ended(int status, char *buf, size_t len)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == RUN_EXIT_NOT_FOUND)
		snprintf(buf, len,
			 "the command could not be run (exit status 127: not found, or a "
			 "shared library it needs is missing)");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == RUN_EXIT_CANNOT_EXECUTE)
		snprintf(buf, len,
			 "the command could not be run (exit status 126: not executable)");
	else if (WIFEXITED(status))
		snprintf(buf, len, "program exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "program killed by signal %d (%s%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, len, "program ended with wait status 0x%x", (unsigned)status);
}

static int run__exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return RUN_EXIT_RECORDER_FAILED;
}

/* Fault injection for the tests (TRC_TEST_FAIL_THREAD=sampler|drain): makes the recorder's
 * thread creation fail, to check that the program is stopped before the error is reported. */
static int run__fail_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	(void)t;
	(void)a;
	(void)fn;
	(void)arg;
	return EAGAIN;
}

struct run_wait {
	int status;
	uint64_t maxrss_bytes;
	bool reaped;
};

/* Reaps the child if it has ended. Returns true once it is reaped. */
static bool run__try_reap(pid_t pid, struct run_wait *w, int flags)
{
	struct rusage ru;
	int st;
	pid_t r;
	do
		r = wait4(pid, &st, flags, &ru);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		return false;
	w->status = st;
	w->maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
	w->reaped = true;
	return true;
}

static void run__progress(struct recorder *rec, uint64_t *last_events, uint64_t *last_ns)
{
	struct recorder_stats st;
	recorder_get_stats(rec, &st);
	uint64_t now = trc_clock_ns(CLOCK_MONOTONIC);
	double dt = (double)(now - *last_ns) / 1e9;
	double rate = dt > 0 ? (double)(st.events - *last_events) / dt : 0;
	*last_events = st.events;
	*last_ns = now;
	char written[32], rss[32];
	cli_fmt_bytes(written, sizeof(written), st.bytes_written);
	cli_fmt_bytes(rss, sizeof(rss), st.last_rss_bytes);
	fprintf(stderr, "\rtrace-run: %.2fM events/s, %s written, RSS %s, %" PRIu64 " lost\033[K",
		rate / 1e6, written, rss, st.lost);
}

/* Two interrupts this close together mean "stop now"; further apart, each is one interrupt for
 * the program (a REPL's user presses Ctrl-C now and then for hours). */
#define RUN_ESCALATE_WINDOW_NS 2000000000ull
/* SIGTERM asks the program to end, which a REPL does not ignore the way it handles Ctrl-C: a
 * program still running this long after a SIGTERM is stuck, and the next SIGINT or SIGTERM,
 * however late, finalizes at once (`timeout`, `kill`, a service manager send it again). */
#define RUN_TERM_GRACE_NS 5000000000ull
/* Chunks written stored while compression was behind are normal on a small machine and cost
 * nothing once compressed before exit; the last lines mention them only when that took a
 * user-visible time at exit, or when they stay stored (the file is larger). */
#define RUN_COMPACT_SAY_S 1.0

/* RUN_COMPACT_SAY_S, or the milliseconds TRC_TEST_COMPACT_SAY_MS gives (a test hook, README
 * "Test hooks": the tests see the line without a compaction that takes seconds). */
static double run__compact_say_s(void)
{
	const char *e = getenv("TRC_TEST_COMPACT_SAY_MS");
	char *end;
	double ms = e ? strtod(e, &end) : -1;
	return e && end != e && !*end && ms >= 0 ? ms / 1000.0 : RUN_COMPACT_SAY_S;
}

/* Kills the program and, when it leads a process group of its own (a shell with job control
 * does that), the group, so nothing it started is left behind. A group shared with trace-run
 * is not signalled (that would kill trace-run before it finalizes the trace). */
static void run__kill_program(pid_t pid)
{
	pid_t pg = getpgid(pid);
	if (pg > 1 && pg != getpgrp())
		kill(-pg, SIGKILL);
	kill(pid, SIGKILL);
}

/* Disk full (ENOSPC) and the file size limit (EFBIG) stop the recording, not the program: the
 * trace keeps what was written before, marked truncated, and trace-run exits with the
 * program's status. Any other failure to write or close the trace (an I/O error, fsync or
 * close failing) is trace-run's own failure: exit 1. */
static bool run__disk_full(int err)
{
	return err == -ENOSPC || err == -EFBIG;
}

/* True when the trace reads back (header intact; a missing footer is read as truncated). */
static bool run__trace_readable(const char *output)
{
	struct trcfile_reader *r = NULL;
	if (trcfile_reader_open(output, &r, NULL, 0) != 0)
		return false;
	trcfile_reader_close(r);
	return true;
}

/* The one line of a trace that could not be written or closed (verb: "writing", "closing"):
 * trace-run then exits 1. status: the program's, as wait gave it. */
static void run__trace_failed(const char *verb, const char *output, int err, int status)
{
	char ended[160];
	run__how_it_ended(status, ended, sizeof(ended));
	fprintf(stderr, "trace-run: %s %s failed: %s; the trace is incomplete or unreadable (%s)\n",
		verb, output, strerror(-err), ended);
}

/* The one message of a recording that stopped (disk full, file size limit) while the program
 * runs on: said once, when trace-run first sees it or at the end. */
static void run__recording_stopped(const char *output, int err, bool *said)
{
	if (*said)
		return;
	*said = true;
	fprintf(stderr,
		"trace-run: recording stopped: writing %s failed: %s; the program runs on, and the "
		"trace holds what was written before (marked truncated)\n",
		output, strerror(-err));
}

/* The external signal being looked at: whether it reached the program too, and whether it is
 * read again (the same event). */
struct run_signal_event {
	int signo; /* 0: none */
	pid_t sender;
	uint64_t first_ns;
	bool decided; /* passed on, or known to have reached the program */
};

/* The latest signal the witness saw, per signal number: the group got it. */
struct run_group_seen {
	pid_t sender;
	uint64_t ns;
	bool seen;
};

static bool run__group_got(const struct run_group_seen *g, int signo, pid_t sender, uint64_t now)
{
	const struct run_group_seen *e = &g[signo];
	return e->seen && e->sender == sender && now - e->ns < RUN_ONE_SIGNAL_NS;
}

/* Passes the event's signal on to the program unless it was decided already. */
static void run__decide(struct run_signal_event *ev, pid_t pid)
{
	if (ev->signo && !ev->decided)
		kill(pid, ev->signo);
	ev->decided = true;
}

/* The witness's reports so far; an undecided event the group got is decided (not passed on:
 * the program got it) when the program is still in trace-run's process group. */
static void run__read_witness(struct run_witness *wit, struct run_group_seen *g,
			      struct run_signal_event *ev, pid_t pid)
{
	struct run_witness_report rep;
	while (run_witness_read(wit, &rep)) {
		if (rep.signo <= 0 || rep.signo >= NSIG)
			continue;
		g[rep.signo] = (struct run_group_seen){rep.sender_pid, rep.mono_ns, true};
		if (ev->signo == rep.signo && !ev->decided && ev->sender == rep.sender_pid &&
		    getpgid(pid) == getpgrp())
			ev->decided = true;
	}
}

/* Waits for the child, forwarding signals. Returns when the child is reaped. */
static void run__wait_child(int sfd, struct run_witness *wit, pid_t pid, struct recorder *rec,
			    bool progress, const char *output, bool *stopped_said,
			    struct run_wait *w)
{
	uint64_t last_interrupt_ns = 0, first_term_ns = 0;
	bool interrupted = false, termed = false;
	uint64_t last_events = 0, last_ns = trc_clock_ns(CLOCK_MONOTONIC);
	run__try_reap(pid, w, WNOHANG); /* its SIGCHLD may have gone to the startup guard */
	uint64_t next_tick_ns = last_ns + 1000000000ull;
	struct run_signal_event ev = {0};
	struct run_group_seen group[NSIG] = {{0}};

	while (!w->reaped) {
		struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
					{.fd = wit->fd, .events = POLLIN}};
		uint64_t now = trc_clock_ns(CLOCK_MONOTONIC);
		/* Wakes every second (progress, the recorder's health), and when the event's time
		 * to be passed on has come. */
		uint64_t until = next_tick_ns;
		if (ev.signo && !ev.decided && ev.first_ns + RUN_ONE_SIGNAL_NS < until)
			until = ev.first_ns + RUN_ONE_SIGNAL_NS;
		int wait_ms = until > now ? (int)((until - now + 999999) / 1000000) : 0;
		int pr = poll(pfd, 2, wait_ms);
		if (pr < 0 && errno != EINTR)
			break;
		run__read_witness(wit, group, &ev, pid);
		/* A witness gone (killed by someone) leaves its pipe readable for ever: without
		 * it, every signal sent to trace-run is passed on, as one sent to it alone. */
		if (pr > 0 && (pfd[1].revents & (POLLHUP | POLLERR | POLLNVAL)))
			run_witness_stop(wit);
		now = trc_clock_ns(CLOCK_MONOTONIC);
		if (ev.signo && !ev.decided && now - ev.first_ns >= RUN_ONE_SIGNAL_NS)
			run__decide(&ev, pid); /* sent to trace-run alone */
		if (now >= next_tick_ns) {
			next_tick_ns = now + 1000000000ull;
			struct recorder_stats st;
			recorder_get_stats(rec, &st);
			if (run__disk_full(st.drain_error) && !*stopped_said) {
				if (progress)
					fputs("\r\033[K", stderr);
				run__recording_stopped(output, st.drain_error, stopped_said);
			}
			if (progress)
				run__progress(rec, &last_events, &last_ns);
		}
		if (pr <= 0 || !(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		ssize_t n = read(sfd, &si, sizeof(si));
		if (n != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			run__try_reap(pid, w, WNOHANG);
			continue;
		}
		/* A signal someone sent (kill, sigqueue) reached trace-run; it may have reached the
		 * program too (sent to the group) or not (sent to trace-run alone: passed on). One
		 * from the terminal (SI_KERNEL) already reached the whole foreground group. */
		const int signo = (int)si.ssi_signo;
		if (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE) {
			const pid_t sender = (pid_t)si.ssi_pid;
			if (ev.signo == signo && ev.sender == sender &&
			    now - ev.first_ns < RUN_ONE_SIGNAL_NS)
				continue; /* the same event, read again: it counts once */
			run__decide(&ev, pid);
			ev = (struct run_signal_event){signo, sender, now, false};
			run__read_witness(wit, group, &ev, pid);
			if (wit->pid < 0 || getpgid(pid) != getpgrp())
				run__decide(&ev, pid); /* no witness, or a group the program left */
			else if (run__group_got(group, signo, sender, now))
				ev.decided = true;
		}
		if (signo == SIGINT || signo == SIGTERM) {
			if (interrupted && now - last_interrupt_ns < RUN_ESCALATE_WINDOW_NS) {
				fprintf(stderr, "\ntrace-run: second interrupt: finalizing the "
						"trace now\n");
				run__kill_program(pid);
				run__try_reap(pid, w, 0);
			} else if (termed && now - first_term_ns >= RUN_TERM_GRACE_NS) {
				fprintf(stderr,
					"\ntrace-run: the program is still running %.0f s after "
					"SIGTERM: finalizing the trace now\n",
					(double)(now - first_term_ns) / 1e9);
				run__kill_program(pid);
				run__try_reap(pid, w, 0);
			}
			interrupted = true;
			last_interrupt_ns = now;
			if (signo == SIGTERM && !termed) {
				termed = true;
				first_term_ns = now;
			}
		}
	}
	if (!w->reaped)
		run__try_reap(pid, w, 0);
	if (progress)
		fputs("\r\033[K", stderr);
}

/* With --follow (the default), after the command ended: waits for the rest of the traced tree
 * (run_follow.h), trace-run's children when it is their subreaper, else the processes attached
 * to the session. SIGINT or SIGTERM ends the wait at once, naming who still runs; other
 * signals have no one to go to (the command has ended) and are dropped. */
static void run__follow_tree(int sfd, const struct run_witness *wit,
			     const struct trc_session *session, pid_t child, bool subreaper)
{
	enum { NAMED = 8 };
	pid_t pids[NAMED];
	for (;;) {
		uint32_t n = subreaper ? run_follow_scan(wit->pid, pids, NAMED)
				       : session_processes_running(session, child, pids, NAMED);
		if (!n)
			return;
		/* A subreaper hears each end (SIGCHLD); the session's table is polled. */
		struct pollfd pfd = {.fd = sfd, .events = POLLIN};
		int pr = poll(&pfd, 1, subreaper ? 1000 : 50);
		if (pr <= 0 || !(pfd.revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
			char names[640];
			run_follow_names(pids, n < NAMED ? n : NAMED, names, sizeof(names));
			fprintf(stderr,
				"trace-run: interrupted: the recording ends now; %u %s of the traced "
				"tree still running (not waited for): %s%s\n",
				n, n == 1 ? "process" : "processes", names, n > NAMED ? ", ..." : "");
			return;
		}
	}
}

int main(int argc, char **argv)
{
	/* Before anything opens a descriptor (run_spawn.h "Descriptors 0-2"). */
	unsigned closed_std_fds = run_spawn_guard_std_fds();
	struct run_options opt;
	int rc = run_options_parse(argc, argv, &opt);
	if (rc < 0)
		return 0;
	if (rc)
		return rc;
	bool progress = opt.progress < 0 ? (!opt.quiet && isatty(STDERR_FILENO)) : opt.progress;
	/* What the preload library captures (stack_capture.h): in the environment the command
	 * and every process it starts inherit. */
	char depth[16];
	snprintf(depth, sizeof(depth), "%u", opt.stack_depth);
	if (setenv(TRC_ALLOC_STACKS_ENV, opt.alloc_stacks, 1) || setenv(TRC_STACK_DEPTH_ENV, depth, 1)) {
		fprintf(stderr, "trace-run: cannot set the environment: %s\n", strerror(errno));
		return 1;
	}
	/* The writer's chunk buffers (64 KiB to 16 MiB) come and go with the streams: a fixed
	 * mmap threshold keeps glibc from raising it after the first free, so freed buffers go
	 * back to the system instead of staying in the heap (the recorder's RSS). */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);

	/* Signals: blocked everywhere in trace-run, read from a signalfd by this thread. SIGPIPE
	 * is blocked too (a write to a dead child's pipe returns EPIPE), never ignored, since an
	 * ignored disposition would be inherited by the command. */
	sigset_t handled, child_mask;
	sigemptyset(&handled);
	sigaddset(&handled, SIGINT);
	sigaddset(&handled, SIGTERM);
	sigaddset(&handled, SIGHUP);
	sigaddset(&handled, SIGQUIT);
	sigaddset(&handled, SIGCHLD);
	sigaddset(&handled, SIGUSR1);
	sigaddset(&handled, SIGUSR2);
	sigset_t blocked = handled;
	sigaddset(&blocked, SIGPIPE);
	/* A trace that reaches RLIMIT_FSIZE gets EFBIG from write, as a full disk gives ENOSPC,
	 * instead of killing trace-run (the program keeps its own disposition). */
	sigaddset(&blocked, SIGXFSZ);
	sigprocmask(SIG_BLOCK, &blocked, &child_mask);
	int sfd = signalfd(-1, &handled, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "trace-run: signalfd: %s\n", strerror(errno));
		return RUN_EXIT_RECORDER_FAILED;
	}
	/* Before the session and the trace file exist, so the witness holds neither. Without
	 * it (fork failed) every signal sent to trace-run is passed on, as one sent to it alone. */
	sigset_t witnessed = handled;
	sigdelset(&witnessed, SIGCHLD);
	struct run_witness wit;
	(void)run_witness_start(&wit, &witnessed);

	int err = 0;
	struct session_config scfg = {
		.max_slots = opt.max_threads,
		.ring_bytes = opt.buffer_bytes,
		.ring_pool_bytes = opt.ring_budget_bytes,
		.drop_when_full = opt.drop_when_full,
		.force_clock_gettime = opt.clock == RUN_CLOCK_GETTIME,
	};
	/* The session is a memfd, which a file size limit (ulimit -f) also bounds: lift the soft
	 * limit while it is sized, then put it back for the trace file and the program. What
	 * cannot be lifted (`ulimit -f` sets the hard limit too) sizes the session instead. */
	struct rlimit fsize_limit;
	bool fsize_known = getrlimit(RLIMIT_FSIZE, &fsize_limit) == 0;
	bool fsize_lifted = fsize_known && fsize_limit.rlim_cur < fsize_limit.rlim_max;
	if (fsize_lifted) {
		struct rlimit up = {fsize_limit.rlim_max, fsize_limit.rlim_max};
		fsize_lifted = setrlimit(RLIMIT_FSIZE, &up) == 0;
	}
	const rlim_t room = !fsize_known   ? RLIM_INFINITY
			    : fsize_lifted ? fsize_limit.rlim_max
					   : fsize_limit.rlim_cur;
	if (!run__fit_session(&scfg, &opt, room)) {
		char lim[32], least[32], ring[32], with[96] = "", lower[64] = "";
		cli_fmt_bytes(lim, sizeof(lim), (uint64_t)room);
		cli_fmt_bytes(least, sizeof(least), session_region_bytes(&scfg));
		cli_fmt_bytes(ring, sizeof(ring), scfg.ring_bytes);
		if (opt.buffer_bytes_given && opt.max_threads_given)
			snprintf(with, sizeof(with), " with --buffer-size %s and --max-threads %u",
				 ring, scfg.max_slots);
		else if (opt.buffer_bytes_given)
			snprintf(with, sizeof(with), " with --buffer-size %s", ring);
		else if (opt.max_threads_given)
			snprintf(with, sizeof(with), " with --max-threads %u", scfg.max_slots);
		if (opt.buffer_bytes_given || opt.max_threads_given)
			snprintf(lower, sizeof(lower), " or lower %s",
				 opt.buffer_bytes_given ? "--buffer-size" : "--max-threads");
		fprintf(stderr,
			"trace-run: cannot create the trace session: the file size limit (ulimit "
			"-f: %s) is below the %s its buffers need at the least%s (sparse memory, "
			"not disk): raise the limit%s\n",
			lim, least, with, lower);
		if (fsize_lifted)
			setrlimit(RLIMIT_FSIZE, &fsize_limit);
		run_witness_stop(&wit);
		return RUN_EXIT_RECORDER_FAILED;
	}
	struct trc_session *session = session_create(&scfg, &err);
	if (fsize_lifted)
		setrlimit(RLIMIT_FSIZE, &fsize_limit);
	if (!session) {
		fprintf(stderr, "trace-run: cannot create the trace session: %s\n", strerror(-err));
		run_witness_stop(&wit);
		return RUN_EXIT_RECORDER_FAILED;
	}
	if (!opt.quiet &&
	    (scfg.ring_bytes != opt.buffer_bytes || scfg.max_slots != opt.max_threads)) {
		char lim[32], ring[32];
		cli_fmt_bytes(lim, sizeof(lim), (uint64_t)room);
		cli_fmt_bytes(ring, sizeof(ring), scfg.ring_bytes);
		fprintf(stderr,
			"trace-run: note: the file size limit (ulimit -f: %s) bounds the session's "
			"buffers: %u threads at once (--max-threads), rings of at most %s "
			"(--buffer-size)\n",
			lim, scfg.max_slots, ring);
	}
	opt.buffer_bytes = scfg.ring_bytes; /* what the trace's header says */
	opt.max_threads = scfg.max_slots;

	char *preload = NULL;
	if (opt.preload) {
		preload = run_find_preload();
		if (!preload && !opt.quiet)
			fprintf(stderr, "trace-run: warning: libtrc-preload.so not found next to "
					"trace-run; allocations and function calls will not be "
					"recorded\n");
	}

	/* Before the command is forked: its orphans come to trace-run from then on. */
	const bool subreaper = opt.follow && run_follow_start();
	struct run_child child = {
		.pid = -1, .go_fd = -1, .err_fd = -1, .closed_std_fds = closed_std_fds};
	rc = run_spawn_prepare(&child, opt.argv, session_fd(session), TRC_SESSION_FD_ENV, preload,
			       &child_mask);
	if (rc) {
		fprintf(stderr, "trace-run: cannot start %s: %s\n", opt.argv[0], strerror(-rc));
		session_destroy(session);
		free(preload);
		run_witness_stop(&wit);
		return RUN_EXIT_RECORDER_FAILED;
	}

	char *default_out = NULL;
	const char *output = opt.output;
	if (!output)
		output = default_out = run__default_output(opt.argv[0], child.pid);
	/* From here to the exec, main may block (a FIFO as the output blocks its open until a
	 * reader comes): the guard reads the signals meanwhile (run_guard.h). */
	struct run_guard guard;
	run_guard_init(&guard, sfd, output);
	atomic_store(&guard.child, child.pid);
	(void)run_guard_start(&guard, RUN_GUARD_STARTUP);

	uint32_t cmdline_len = 0;
	char *cmdline = run__join_argv(opt.argv, &cmdline_len);
	struct utsname un;
	char host[512] = "unknown";
	if (uname(&un) == 0)
		snprintf(host, sizeof(host), "%s %s %s %s", un.nodename, un.sysname, un.release,
			 un.machine);
	struct session_clock_info ci;
	session_clock_info(session, &ci);
	uint32_t stacks_mode = !opt.preload || strcmp(opt.alloc_stacks, "none") == 0
				       ? TRCFILE_ALLOC_STACKS_NONE
			       : strcmp(opt.alloc_stacks, "all") == 0 ? TRCFILE_ALLOC_STACKS_ALL
								      : TRCFILE_ALLOC_STACKS_SAMPLED;
	struct trcfile_header_info hdr = {
		.cmdline = cmdline,
		.cmdline_len = cmdline_len,
		.pid = (uint32_t)child.pid,
		.start_mono_ns = trc_clock_ns(CLOCK_MONOTONIC),
		.start_realtime_ns = trc_clock_ns(CLOCK_REALTIME),
		.clock_source = ci.clock_source,
		.tsc_hz = ci.tsc_hz,
		.rss_interval_ns = opt.rss_enabled ? opt.rss_interval_ns : 0,
		.rss_source = opt.rss_enabled ? (uint32_t)opt.rss_source : 0,
		.buffer_bytes = opt.buffer_bytes,
		.when_full = opt.drop_when_full ? TRCFILE_WHEN_FULL_DROP : TRCFILE_WHEN_FULL_WAIT,
		.alloc_stacks = stacks_mode,
		.stack_depth = opt.stack_depth,
		.sample_bytes = stacks_mode == TRCFILE_ALLOC_STACKS_SAMPLED
					? strtoull(opt.alloc_stacks + 7, NULL, 10)
					: 0,
		.host = host,
		.tool_version = "trace-run " CLI_VERSION,
	};
	struct trcfile_writer_opts wopts = {
		.zstd_level = opt.zstd_level,
		.compress_threads = opt.compress_threads,
		/* Compression never holds the drain back: chunks the compressors cannot take at
		 * once go to the file stored, and are compressed before we exit (run_compact). */
		.flags = TRCFILE_WRITER_BACKGROUND | TRCFILE_WRITER_PREFAULT |
			 TRCFILE_WRITER_STORE_WHEN_BEHIND | TRCFILE_WRITER_NO_FSYNC_IF_STORED |
			 TRCFILE_WRITER_LOSE_WHEN_FULL,
	};
	/* Test hook: every chunk stored, as when compression is always behind. */
	if (getenv("TRC_TEST_STORE_ALL"))
		wopts.store_one_in = 1;
	/* Test hook: no prefault, whose progress before the first appends varies the recorder's
	 * peak RSS from run to run by up to ~5 MiB (trcfile__prefault_pool). */
	if (getenv("TRC_TEST_NO_PREFAULT"))
		wopts.flags &= ~TRCFILE_WRITER_PREFAULT;
	int exit_code = RUN_EXIT_RECORDER_FAILED;
	struct trcfile_writer *writer = NULL;
	struct recorder *rec = NULL;

	writer = trcfile_writer_open(output, &hdr, &wopts, &err);
	atomic_store(&guard.output_made, writer != NULL);
	if (!writer) {
		run_guard_stop(&guard);
		run_spawn_abort(&child);
		fprintf(stderr, "trace-run: cannot create %s: %s\n", output, strerror(-err));
		goto out;
	}
	/* The file the writer opened: the only one the compaction may replace (run_compact). */
	struct stat written;
	if (stat(output, &written) != 0)
		memset(&written, 0, sizeof(written));
	struct recorder_config rcfg = {
		.session = session,
		.writer = writer,
		.pid = child.pid,
		.rss_enabled = opt.rss_enabled,
		.rss_interval_ns = opt.rss_interval_ns,
		.rss_source = opt.rss_source,
		.no_preload = !opt.preload,
		.keep_stored = opt.keep_stored,
		.finish_interrupt = &guard.finish_interrupt,
	};
	if (getenv("TRC_TEST_FAIL_THREAD"))
		rcfg.create_thread = run__fail_create;
	rec = recorder_start(&rcfg, &err);
	run_guard_stop(&guard); /* the main loop reads the signals from here on */
	if (!rec) {
		run_spawn_abort(&child);
		trcfile_writer_close(writer);
		unlink(output);
		fprintf(stderr, "trace-run: cannot start the recorder: %s\n", strerror(-err));
		goto out;
	}

	rc = run_spawn_go(&child);
	if (rc) {
		struct run_wait w = {0};
		if (rc < 0)
			kill(child.pid, SIGKILL);
		run__try_reap(child.pid, &w, 0);
		recorder_finish(rec, NULL, NULL);
		trcfile_writer_close(writer);
		unlink(output);
		int e = rc < 0 ? -rc : rc;
		fprintf(stderr, "trace-run: %s: %s\n", opt.argv[0],
			e == ENOENT ? "command not found" : strerror(e));
		exit_code = e == ENOENT ? RUN_EXIT_NOT_FOUND : RUN_EXIT_CANNOT_EXECUTE;
		goto out;
	}

	struct run_wait w = {0};
	bool stopped_said = false;
	run__wait_child(sfd, &wit, child.pid, rec, progress, output, &stopped_said, &w);
	if (opt.follow)
		run__follow_tree(sfd, &wit, session, child.pid, subreaper);

	struct recorder_stats st;
	struct recorder_exit ex = {.status = w.status, .maxrss_bytes = w.maxrss_bytes};
	/* The last drain can run long (a process of the tree that outlived the program floods
	 * its ring), and closing the writer waits for the disk: the guard keeps an interrupt
	 * able to cut them short (run_guard.h). */
	(void)run_guard_start(&guard, RUN_GUARD_FINISH);
	int rerr = recorder_finish(rec, &ex, &st);
	struct trcfile_writer_stats wst;
	int cerr = trcfile_writer_close_stats(writer, &wst);
	run_guard_stop(&guard);
	/* A recording that a full disk stopped does not change the program's status: trace-run
	 * exits with it, and says once that the trace is cut short (and leaves its chunks as they
	 * are). Any other write or close failure, or a trace that does not read back, is one line
	 * and exit 1. */
	uint64_t stored = wst.chunks_stored;
	int werr = rerr ? rerr : cerr;
	exit_code = run__exit_code(w.status);
	if (!werr && wst.full_err) {
		/* The writer counted what the full disk did not take: said once, even with -q. */
		fprintf(stderr,
			"trace-run: the disk filled: writing %s failed: %s; the program ran on, and "
			"the %" PRIu64 " %s not written are counted lost in the trace\n",
			output, strerror(-wst.full_err), wst.full_events_unwritten,
			cli_plural(wst.full_events_unwritten, "event", "events"));
		stored = 0; /* no room to compact in */
	} else if (werr && run__disk_full(werr) && run__trace_readable(output)) {
		run__recording_stopped(output, werr, &stopped_said);
		stored = 0;
	} else if (werr) {
		run__trace_failed(rerr ? "writing" : "closing", output, werr, w.status);
		exit_code = RUN_EXIT_RECORDER_FAILED;
		trcfile_bgc_free(st.bgc);
		goto out;
	}

	/* An interrupt while finishing asked trace-run to be done: no compaction after it. */
	struct run_compact_stats cst = {0};
	const bool finish_interrupted = st.interrupted || atomic_load(&guard.finish_interrupt);
	bool compact = stored && !opt.keep_stored && !finish_interrupted;
	guard.exit_code = exit_code;
	if (stored)
		(void)run_guard_start(&guard, RUN_GUARD_COMPACT);
	bool compacted =
		compact && run_compact(output, &written, opt.zstd_level,
				       !opt.quiet && isatty(STDERR_FILENO), st.bgc, &cst) == 0;
	trcfile_bgc_free(st.bgc); /* its side file goes with it (--keep-stored: unused) */
	st.bgc = NULL;
	/* The writer left a trace with stored chunks unsynced for the compaction: one that stays
	 * as it is is synced here; failing that is a failure to close it (the compaction's own
	 * failure is then beside the point: not said). */
	int serr = stored && !compacted ? trcfile_sync_path(output) : 0;
	run_guard_stop(&guard);
	if (serr) {
		run__trace_failed("closing", output, serr, w.status);
		exit_code = RUN_EXIT_RECORDER_FAILED;
		goto out;
	}
	if (compact && !compacted)
		run_compact_warn(output, &cst);

	if (!opt.quiet) {
		char peak[640], size[32], ended[160];
		run__peak_text(&st, w.maxrss_bytes, session, child.pid, peak, sizeof(peak));
		FILE *f = fopen(output, "rb");
		uint64_t fsize = 0;
		if (f) {
			fseek(f, 0, SEEK_END);
			fsize = (uint64_t)ftell(f);
			fclose(f);
		}
		cli_fmt_bytes(size, sizeof(size), fsize);
		struct rusage self;
		getrusage(RUSAGE_SELF, &self);
		run__how_it_ended(w.status, ended, sizeof(ended));
		/* The recorder's own cost: every thread of trace-run (drain, writer, compressors,
		 * sampler, the compaction), not the program's (RUSAGE_SELF leaves children out). */
		double cpu_s = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6 +
			       (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6;
		/* Events the drain moved that the full disk did not take are lost, not recorded. */
		uint64_t full_lost = wst.full_events_unwritten;
		uint64_t recorded = st.events > full_lost ? st.events - full_lost : 0;
		char full_note[64] = "";
		if (full_lost)
			snprintf(full_note, sizeof(full_note), " (%" PRIu64 " as the disk filled)",
				 full_lost);
		fprintf(stderr,
			"trace-run: %s (%s): %" PRIu64 " %s, %" PRIu64
			" lost%s, peak RSS %s; %s; recorder RSS %.1f MiB, "
			"CPU %.2f s\n",
			output, size, recorded, cli_plural(recorded, "event", "events"),
			st.lost + full_lost, full_note, peak, ended, (double)self.ru_maxrss / 1024.0,
			cpu_s);
		if (stored && compacted && opt.verbose) {
			char refused[96] = "";
			if (cst.refused)
				snprintf(refused, sizeof(refused),
					 " (%" PRIu64 " background %s refused)", cst.refused,
					 cli_plural(cst.refused, "copy", "copies"));
			fprintf(stderr,
				"trace-run: %" PRIu64 " %s written uncompressed while compression "
				"was behind (%.1f MiB written while recording): %" PRIu64
				" compressed in the background, %" PRIu64
				" compressed before exit in %.2f s%s\n",
				stored, cli_plural(stored, "chunk was", "chunks were"),
				(double)wst.bytes_written / 1048576.0, cst.background, cst.at_end,
				cst.seconds, refused);
		} else if (stored && compacted && cst.seconds >= run__compact_say_s()) {
			fprintf(stderr,
				"trace-run: compressing the trace took %.1f s at exit: normal when "
				"the program writes faster than compression runs (%" PRIu64
				" of %" PRIu64 " chunks were compressed in the background; "
				"--keep-stored skips this and leaves the trace larger)\n",
				cst.seconds, cst.background, stored);
		} else if (stored && !compact)
			fprintf(stderr,
				"trace-run: %" PRIu64 " %s left uncompressed (%s): the "
				"trace is larger than it need be until trace-dump compact "
				"compresses %s\n",
				stored, cli_plural(stored, "chunk was", "chunks were"),
				opt.keep_stored ? "--keep-stored" : "interrupted",
				cli_plural(stored, "it", "them"));
	}

out:
	free(cmdline);
	free(default_out);
	free(preload);
	session_destroy(session);
	run_guard_stop(&guard);
	run_witness_stop(&wit);
	close(sfd);
	return exit_code;
}
