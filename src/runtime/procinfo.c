/* procinfo.c - the PROCESS and MODULE records a process writes when its first thread
 * claims a ring: pid, ppid and command line (/proc/self/cmdline), and every executable file
 * mapping (/proc/self/maps), so trace-dump can tell processes apart and name the addresses of
 * FUNC_ENTER/EXIT records.
 *
 * Build-ids: each MODULE record carries the GNU build-id of its file, read from the process's
 * own memory (no file access, so it is the build-id of the code that ran): the ELF header is
 * at the start of the file's mapping at offset 0, which maps file bytes [0, its length); the
 * PT_NOTE segments inside that range are searched for NT_GNU_BUILD_ID. Every check is against
 * that mapping's length and the mapping must be readable, so a file with odd headers gives no
 * build-id, never a fault.
 *
 * Modules mapped later (dlopen): trc__modules_changed (called by the preload library's dlopen
 * hook) re-reads /proc/self/maps and writes the MODULE records of executable mappings not
 * written before. "Written before" is a fixed table of hashes of (start, end, offset, path),
 * reset when the process's first thread writes its records (also in a fork child); a full
 * table, or a rescan that finds the table busy on another thread, writes duplicates (readers
 * accept a module twice) rather than wait.
 *
 * Slow path, on the claiming thread, which holds its ring with ok == 0 (trc.h). No malloc (the
 * preload library may be hooking it): fixed buffers on the stack, read(2) in chunks, lines
 * longer than the buffer are skipped. Records too large for the ring are dropped and counted
 * by the ring like any other.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

static int trc__open_proc(const char *path)
{
	int fd;
	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd;
}

static ssize_t trc__read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* The bytes of /proc/self/cmdline, counted up to cap + 1 (more than cap: it will be cut). */
static uint64_t trc__cmdline_bytes(uint32_t cap)
{
	char buf[1024];
	uint64_t len = 0;
	int fd = trc__open_proc("/proc/self/cmdline");
	if (fd < 0)
		return 0;
	while (len <= cap) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (uint64_t)n;
	}
	close(fd);
	return len;
}

/* The command line goes straight into the ring (no buffer of its size on a thread's stack):
 * counted first, then read into the reserved record. Whole, it is empty or ends in a NUL byte
 * (one is added if the program rewrote its arguments without one); cut at the cap, it does
 * not, which is how readers tell (session_layout.h TRC_CMDLINE_MAX). */
static void trc__emit_process(struct trc__thread *t, unsigned mode)
{
	uint32_t cap = trc_cmdline_cap(trc__rt.geom.ring_bytes);
	uint64_t whole = trc__cmdline_bytes(cap);
	bool cut = whole > cap;
	uint32_t len = cut ? cap : (uint32_t)whole;
	struct trc_ring_process *r = trc__reserve(t, TRC_TAG(TRC_REC_PROCESS, 0),
						  (uint32_t)sizeof(*r) + len + (cut ? 0 : 1));
	if (!r)
		return;
	char *cmd = (char *)(r + 1);
	ssize_t got = 0;
	int fd = trc__open_proc("/proc/self/cmdline");
	if (fd >= 0) {
		got = trc__read_full(fd, cmd, len);
		close(fd);
	}
	if (got < 0)
		got = 0;
	/* The arguments may have changed between the two reads: what the second one saw. */
	len = (uint32_t)got;
	if (cut) {
		while (len && cmd[len - 1] == 0)
			len--;
	} else if (len && cmd[len - 1] != 0) {
		cmd[len++] = 0;
	}
	r->ts = trc__now(mode);
	r->pid = (uint32_t)trc__rt.pid;
	r->ppid = (uint32_t)getppid();
	r->cmdline_len = len;
	ring_commit_sp(&t->prod);
}

static uint64_t trc__hex(const char **s)
{
	uint64_t v = 0;
	for (;; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* The mapping at file offset 0 of the path last seen in /proc/self/maps (the ELF header). */
struct trc__elf_head {
	uint64_t start, len;
	uint32_t path_len;
	char path[512];
};

/* The modules already written by this process (hashes; 0 = empty). */
#define TRC__SEEN_MAX 1024u
static uint64_t trc__seen[TRC__SEEN_MAX];
static unsigned trc__n_seen;
static atomic_flag trc__seen_lock = ATOMIC_FLAG_INIT;

static uint64_t trc__module_hash(uint64_t start, uint64_t stop, uint64_t offset, const char *p,
				 uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ start ^ (stop << 1) ^ (offset << 2);
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

/* True when the module was written before; else remembers it (when dedup is on). */
static bool trc__module_seen(bool dedup, uint64_t h)
{
	if (!dedup)
		return false;
	for (unsigned i = 0; i < trc__n_seen; i++)
		if (trc__seen[i] == h)
			return true;
	if (trc__n_seen < TRC__SEEN_MAX)
		trc__seen[trc__n_seen++] = h;
	return false;
}

/* The GNU build-id of the ELF file mapped at [base, base + len) from file offset 0, into
 * out (TRC_BUILD_ID_MAX bytes); returns its length, 0 when there is none. */
static uint32_t trc__build_id(uint64_t base, uint64_t len, uint8_t *out)
{
	const uint8_t *b = (const uint8_t *)(uintptr_t)base;
	if (len < sizeof(Elf64_Ehdr))
		return 0;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > len ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return 0;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(b + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_offset > len ||
		    ph[i].p_filesz > len - ph[i].p_offset || (ph[i].p_offset & 3))
			continue;
		uint64_t pos = ph[i].p_offset, end = ph[i].p_offset + ph[i].p_filesz;
		while (end - pos >= sizeof(Elf64_Nhdr)) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(b + pos);
			uint64_t name_sz = ((uint64_t)nh->n_namesz + 3) & ~3ull;
			uint64_t desc_sz = ((uint64_t)nh->n_descsz + 3) & ~3ull;
			uint64_t body = pos + sizeof(*nh);
			if (name_sz > end - body || desc_sz > end - body - name_sz)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(b + body, "GNU", 4) == 0 && nh->n_descsz > 0 &&
			    nh->n_descsz <= TRC_BUILD_ID_MAX) {
				memcpy(out, b + body + name_sz, nh->n_descsz);
				return nh->n_descsz;
			}
			pos = body + name_sz + desc_sz;
		}
	}
	return 0;
}

/* One line of /proc/self/maps: "start-end perms offset dev inode   path". */
static void trc__emit_module_line(struct trc__thread *t, unsigned mode, const char *line,
				  size_t len, struct trc__elf_head *head, bool dedup)
{
	const char *s = line, *end = line + len;
	uint64_t start = trc__hex(&s);
	if (s >= end || *s++ != '-')
		return;
	uint64_t stop = trc__hex(&s);
	if (end - s < 6 || s[0] != ' ')
		return;
	bool readable = s[1] == 'r', exec = s[3] == 'x';
	s += 6;
	uint64_t offset = trc__hex(&s);
	/* skip " dev inode", then spaces up to the path */
	for (int field = 0; field < 2; field++) {
		while (s < end && *s == ' ')
			s++;
		while (s < end && *s != ' ')
			s++;
	}
	while (s < end && *s == ' ')
		s++;
	if (s >= end || (*s != '/' && *s != '['))
		return;
	uint32_t plen = (uint32_t)(end - s);
	if (offset == 0 && readable && *s == '/' && plen <= sizeof(head->path)) {
		head->start = start;
		head->len = stop - start;
		head->path_len = plen;
		memcpy(head->path, s, plen);
	}
	if (!exec || trc__module_seen(dedup, trc__module_hash(start, stop, offset, s, plen)))
		return;
	uint8_t bid[TRC_BUILD_ID_MAX];
	uint32_t bid_len = 0;
	if (head->path_len == plen && memcmp(head->path, s, plen) == 0)
		bid_len = trc__build_id(head->start, head->len, bid);
	struct trc_ring_module *r =
		trc__reserve(t, TRC_TAG(TRC_REC_MODULE, 0), (uint32_t)sizeof(*r) + plen + bid_len);
	if (!r)
		return;
	r->ts = trc__now(mode);
	r->start = start;
	r->end = stop;
	r->offset = offset;
	r->path_len = TRC_RING_MODULE_LENS(plen, bid_len);
	memcpy(r + 1, s, plen);
	memcpy((char *)(r + 1) + plen, bid, bid_len);
	ring_commit_sp(&t->prod);
}

/* Calls line(ctx, text, len) for each line of the /proc file at path (without its newline),
 * reading in chunks into the caller's stack buffer (no allocation: the exit path and the
 * preload hooks call this); a line longer than buf is skipped whole. Stops when line returns
 * true. */
static void trc__proc_lines(const char *path, char *buf, size_t size,
			    bool (*line)(void *ctx, const char *text, size_t len), void *ctx)
{
	size_t have = 0;
	bool skipping = false; /* inside a line longer than buf */
	int fd = trc__open_proc(path);
	if (fd < 0)
		return;
	for (bool done = false; !done;) {
		ssize_t n = read(fd, buf + have, size - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		size_t pos = 0;
		char *nl;
		while (!done && (nl = memchr(buf + pos, '\n', have - pos)) != NULL) {
			size_t l = (size_t)(nl - (buf + pos));
			if (!skipping)
				done = line(ctx, buf + pos, l);
			skipping = false;
			pos += l + 1;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
		if (have == size) {
			have = 0;
			skipping = true;
		}
	}
	close(fd);
}

struct trc__modules_walk {
	struct trc__thread *t;
	unsigned mode;
	bool dedup;
	struct trc__elf_head head;
};

static bool trc__modules_line(void *ctx, const char *text, size_t len)
{
	struct trc__modules_walk *w = ctx;
	trc__emit_module_line(w->t, w->mode, text, len, &w->head, w->dedup);
	return false;
}

static void trc__emit_modules(struct trc__thread *t, unsigned mode, bool dedup)
{
	struct trc__modules_walk w = {.t = t, .mode = mode, .dedup = dedup};
	char buf[8192];
	trc__proc_lines("/proc/self/maps", buf, sizeof(buf), trc__modules_line, &w);
}

void trc__emit_process_info(struct trc__thread *t, unsigned mode)
{
	trc__emit_process(t, mode);
	/* The first writer of this process (meta_done); a dlopen rescan racing with it on
	 * another thread finds the lock taken and writes duplicates. */
	bool dedup = !atomic_flag_test_and_set_explicit(&trc__seen_lock, memory_order_acquire);
	if (dedup)
		trc__n_seen = 0;
	trc__emit_modules(t, mode, dedup);
	if (dedup) /* release: the table's entries before the next holder reads them */
		atomic_flag_clear_explicit(&trc__seen_lock, memory_order_release);
}

/* ---- the process's own exit record ---------------------------------------------------- */

struct trc__hwm_walk {
	uint64_t kb;
	bool found;
};

static bool trc__hwm_line(void *ctx, const char *line, size_t len)
{
	static const char key[] = "VmHWM:";
	struct trc__hwm_walk *w = ctx;
	if (len <= sizeof(key) - 1 || memcmp(line, key, sizeof(key) - 1) != 0)
		return false;
	const char *c = line + sizeof(key) - 1, *end = line + len;
	while (c < end && (*c == ' ' || *c == '\t'))
		c++;
	for (; c < end && *c >= '0' && *c <= '9'; c++)
		w->kb = w->kb * 10 + (uint64_t)(*c - '0');
	w->found = true;
	return true;
}

/* The value in bytes of the "VmHWM:" line of /proc/self/status ("VmHWM:\t  1234 kB"); 0 when
 * it cannot be read. Chunked reads into a stack buffer (a status file with a long Groups
 * line is larger than it); the key is searched line by line. */
static uint64_t trc__own_hwm_bytes(void)
{
	struct trc__hwm_walk w = {0};
	char buf[2048];
	trc__proc_lines("/proc/self/status", buf, sizeof(buf), trc__hwm_line, &w);
	return w.found ? w.kb * 1024 : 0;
}

/* The trace buffers resident in this process, counted as session_buffers_resident_bytes
 * counts them (session_layout.h "Residency"): the metadata, and what each of this process's
 * ring slots has faulted in. */
static uint64_t trc__own_buffers_bytes(void)
{
	uint64_t rings = 0;
	for (uint32_t i = 0; i < trc__rt.geom.max_slots; i++) {
		struct trc_slot *sl = trc__slot(i);
		uint32_t st =
			TRC_SLOT_STATE(atomic_load_explicit(&sl->state, memory_order_relaxed));
		if (st == TRC_SLOT_FREE || st > TRC_SLOT_RETIRED ||
		    __atomic_load_n(&sl->pid, __ATOMIC_RELAXED) != trc__rt.region_pid)
			continue;
		uint64_t n = atomic_load_explicit(&sl->resident_bytes, memory_order_relaxed);
		rings += n < trc__rt.geom.ring_bytes ? n : trc__rt.geom.ring_bytes;
	}
	return rings + trc__rt.geom.rings_off;
}

/* Set once this process wrote its EXIT record (cleared in a fork child). */
static atomic_flag trc__exit_written = ATOMIC_FLAG_INIT;
/* The code exit() was called with, or main returned (the preload library's hooks); -1 when
 * not known. Reset in a fork child. */
static atomic_int trc__code = -1;

void trc__exit_code(int code)
{
	atomic_store_explicit(&trc__code, code & 0xff, memory_order_relaxed);
}

void trc__emit_exit_info(struct trc__thread *t, unsigned mode, int code)
{
	if (atomic_flag_test_and_set_explicit(&trc__exit_written, memory_order_relaxed))
		return;
	uint64_t hwm = trc__own_hwm_bytes();
	struct trc_ring_exit *r = trc__reserve(t, TRC_TAG(TRC_REC_EXIT, 0), (uint32_t)sizeof(*r));
	if (!r)
		return;
	r->ts = trc__now(mode);
	r->pid = trc__rt.region_pid;
	r->flags = TRC_EXIT_SELF | (code >= 0 ? TRC_EXIT_STATUS : 0);
	r->status = code >= 0 ? (uint32_t)(code & 0xff) << 8 : 0;
	r->hwm_bytes = hwm;
	/* The most the buffers held at once (the process entry's count), which bounds their
	 * share at the moment of the peak; without an entry only what they hold now. */
	uint64_t peak = trc__buffers_peak();
	r->buffers_bytes = peak ? peak : trc__own_buffers_bytes();
	if (peak)
		r->flags |= TRC_EXIT_BUFFERS_PEAK;
	ring_commit_sp(&t->prod);
}

/* Runs after the program's atexit handlers and its own destructors (this library was
 * initialised before the program, so it is finalised after it): the process's peak is final
 * but for the exit path itself. Only the copy of the runtime that describes the process writes
 * it, with the exit code when the preload library's hooks saw it (exit(), main's return). A
 * process that _exit()s writes it from the preload library's _exit hook instead; one that
 * dies by a signal or exec()s writes none. */
__attribute__((destructor)) static void trc__exit_dtor(void)
{
	if (trc__rt.describes && trc__rt.pid == getpid())
		trc__process_exiting(atomic_load_explicit(&trc__code, memory_order_relaxed));
}

void trc__procinfo_atfork_child(void)
{
	atomic_flag_clear_explicit(&trc__exit_written, memory_order_relaxed);
	atomic_store_explicit(&trc__code, -1, memory_order_relaxed);
	/* The only thread now; the parent's thread that held the lock is not here. */
	atomic_flag_clear_explicit(&trc__seen_lock, memory_order_relaxed);
	trc__n_seen = 0;
}

void trc__emit_new_modules(struct trc__thread *t, unsigned mode)
{
	/* acquire: pairs with the release above, the previous holder's entries are visible */
	bool dedup = !atomic_flag_test_and_set_explicit(&trc__seen_lock, memory_order_acquire);
	trc__emit_modules(t, mode, dedup);
	if (dedup)
		atomic_flag_clear_explicit(&trc__seen_lock, memory_order_release);
}
