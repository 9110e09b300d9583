/* symbols.c - names for the function addresses of a trace, from the recorded modules' files,
 * through elfutils' libdwfl (design and contract in symbols.h).
 *
 * One Dwfl per distinct file (path and build-id), the file reported at base 0 so that
 * addresses inside it are its own ELF addresses plus the bias libdwfl reports: the mapping's
 * load address never matters, only the file offset the module record gives. Files are opened
 * on the first address that needs them; a file that cannot serve (gone, not ELF, another
 * build-id) is remembered as such and named once through the warn callback.
 *
 * Cache: open addressing on (pid, addr), power-of-two size, grown at half full; entries keep
 * their strings (malloc'ed once, freed with the resolver). A trace has as many distinct
 * function addresses as its programs have functions, so the cache stays small.
 *
 * Threads: one thread per resolver (libdwfl handles are not shared).
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols.h"
#include "u64map.h"

/* libstdc++'s demangler (the Itanium C++ ABI's); trace-dump links -lstdc++. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

enum { SYM__FILE_OK, SYM__FILE_BAD };

/* The largest module file opened: beyond any shared object or executable with its debug
 * info (the largest are a few GiB), so a trace naming a huge file is refused, not read. */
#define SYM__FILE_MAX_BYTES (16ull << 30)

struct sym__file {
	char *path;
	uint8_t build_id[TRC_BUILD_ID_MAX];
	uint32_t build_id_len;
	int state;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;
	GElf_Addr bias;
};

struct sym__entry {
	uint64_t addr;
	uint32_t pid;
	struct sym_info info;
};

struct sym_resolver {
	const struct trcfile_reader *r;
	sym_warn_fn warn;
	void *warn_ctx;
	struct sym__file *files;
	size_t n_files, cap_files;
	struct sym__entry *ents; /* the answers kept */
	uint32_t n_ents, cap_ents;
	struct u64index index; /* (pid, addr) -> ents */
	char **strs; /* owned strings */
	size_t n_strs, cap_strs;
};

static const Dwfl_Callbacks sym__callbacks = {
	.find_elf = NULL,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = NULL,
};

static void sym__warnf(struct sym_resolver *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void sym__warnf(struct sym_resolver *s, const char *fmt, ...)
{
	if (!s->warn)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->warn(s->warn_ctx, msg);
}

static const char *sym__keep(struct sym_resolver *s, const char *str)
{
	if (s->n_strs == s->cap_strs) {
		size_t nc = s->cap_strs ? 2 * s->cap_strs : 64;
		char **p = realloc(s->strs, nc * sizeof(*p));
		if (!p)
			return NULL;
		s->strs = p;
		s->cap_strs = nc;
	}
	char *c = strdup(str);
	if (!c)
		return NULL;
	s->strs[s->n_strs++] = c;
	return c;
}

bool sym_demangle(const char *name, char *buf, size_t len)
{
	if (!name || name[0] != '_' || name[1] != 'Z' || len == 0)
		return false;
	int status = -1;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		return false;
	}
	snprintf(buf, len, "%s", d);
	free(d);
	return true;
}

static bool sym__has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return true;
	}
	return false;
}

/* What a path names, in words, when it is not a regular file. */
static const char *sym__file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFDIR:
		return "a directory";
	case S_IFSOCK:
		return "a socket";
	default:
		return "not a file";
	}
}

/* Opens path for reading only if it is a regular file of at most SYM__FILE_MAX_BYTES: the
 * path comes from the trace, and a FIFO (or /dev/stdin on a pipe, a terminal, a device)
 * would block the open or the reads for good. O_NONBLOCK makes the open itself return at
 * once whatever the path is; it is cleared once fstat says a regular file (where it changes
 * nothing, but libelf's reads should not see it). Returns the descriptor, or -1 having
 * said why once. */
static int sym__open_regular(struct sym_resolver *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		sym__warnf(s, "%s: %s: its functions show as module+offset", path,
			   errno == ENOENT ? "the file is gone" : strerror(errno));
		return -1;
	}
	struct stat st;
	const char *why = NULL;
	char size[96];
	if (fstat(fd, &st) != 0) {
		why = strerror(errno);
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(size, sizeof(size), "not a regular file (%s)", sym__file_kind(st.st_mode));
		why = size;
	} else if ((uint64_t)st.st_size > SYM__FILE_MAX_BYTES) {
		snprintf(size, sizeof(size), "%llu bytes, beyond the %llu a module may have",
			 (unsigned long long)st.st_size, (unsigned long long)SYM__FILE_MAX_BYTES);
		why = size;
	} else {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
			why = strerror(errno);
	}
	if (why) {
		sym__warnf(s, "%s: %s: its functions show as module+offset", path, why);
		close(fd);
		return -1;
	}
	return fd;
}

/* Opens the file of m with libdwfl, checks its build-id; on failure says why once. */
static void sym__file_open(struct sym_resolver *s, struct sym__file *f)
{
	f->state = SYM__FILE_BAD;
	int fd = sym__open_regular(s, f->path);
	if (fd < 0)
		return;
	f->dwfl = dwfl_begin(&sym__callbacks);
	if (!f->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(f->dwfl);
	/* libdwfl owns fd from here (closed by dwfl_end). */
	f->mod = dwfl_report_elf(f->dwfl, f->path, f->path, fd, 0, false);
	dwfl_report_end(f->dwfl, NULL, NULL);
	if (!f->mod) {
		sym__warnf(s,
			   "%s: not an ELF file trace-dump can read (%s): its functions show as "
			   "module+offset",
			   f->path, dwfl_errmsg(-1));
		return;
	}
	f->elf = dwfl_module_getelf(f->mod, &f->bias);
	if (!f->elf)
		return;
	if (f->build_id_len) {
		const unsigned char *bits = NULL;
		GElf_Addr vaddr;
		int n = dwfl_module_build_id(f->mod, &bits, &vaddr);
		if (n <= 0 || (uint32_t)n != f->build_id_len ||
		    memcmp(bits, f->build_id, f->build_id_len) != 0) {
			sym__warnf(s, "%s: %s: its functions show as module+offset", f->path,
				   n <= 0 ? "the file has no build-id, the traced one had"
					  : "the file changed since the trace (another build-id)");
			return;
		}
	}
	f->state = SYM__FILE_OK;
	if (!sym__has_symtab(f->elf)) {
		dwfl_module_getsymtab(f->mod); /* finds a separate debug file, if any */
		const char *debugfile = NULL;
		dwfl_module_info(f->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
		if (!debugfile)
			sym__warnf(s,
				   "%s: stripped (no symbol table): functions it does not export "
				   "show as module+offset",
				   f->path);
	}
}

static struct sym__file *sym__file_get(struct sym_resolver *s, const struct trcfile_module *m)
{
	if (m->path[0] != '/')
		return NULL; /* [vdso] and the like: no file */
	for (size_t i = 0; i < s->n_files; i++) {
		struct sym__file *f = &s->files[i];
		if (strcmp(f->path, m->path) == 0 && f->build_id_len == m->build_id_len &&
		    memcmp(f->build_id, m->build_id, m->build_id_len) == 0)
			return f;
	}
	if (s->n_files == s->cap_files) {
		size_t nc = s->cap_files ? 2 * s->cap_files : 8;
		struct sym__file *p = realloc(s->files, nc * sizeof(*p));
		if (!p)
			return NULL;
		s->files = p;
		s->cap_files = nc;
	}
	struct sym__file *f = &s->files[s->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(m->path);
	if (!f->path)
		return NULL;
	f->build_id_len = m->build_id_len <= TRC_BUILD_ID_MAX ? m->build_id_len : 0;
	memcpy(f->build_id, m->build_id, f->build_id_len);
	s->n_files++;
	sym__file_open(s, f);
	return f;
}

/* The ELF address of file offset off: through the PT_LOAD segment that maps it. */
static bool sym__offset_to_vaddr(Elf *elf, uint64_t off, GElf_Addr *vaddr)
{
	size_t n;
	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= ph.p_offset && off - ph.p_offset < ph.p_filesz) {
			*vaddr = off - ph.p_offset + ph.p_vaddr;
			return true;
		}
	}
	return false;
}

/* The source line of a (a dwfl address) by walking the compile units. libdwfl finds the unit
 * of an address through .debug_aranges, which clang does not emit, and elfutils before 0.191
 * does not fall back: a clang-built file would then have no lines at all. */
static const char *sym__src_by_cu_scan(Dwfl_Module *mod, GElf_Addr a, int *lineno)
{
	Dwarf_Addr bias = 0;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	if (!dw)
		return NULL;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0) {
		if (dwarf_haspc(&cudie, a - bias) <= 0)
			continue;
		Dwarf_Line *l = dwarf_getsrc_die(&cudie, a - bias);
		if (!l || dwarf_lineno(l, lineno) != 0)
			return NULL;
		return dwarf_linesrc(l, NULL, NULL);
	}
	return NULL;
}

static int sym__lookup(struct sym_resolver *s, const struct sym__file *f, uint64_t off,
		       struct sym_info *out)
{
	GElf_Addr vaddr;
	if (!f || f->state != SYM__FILE_OK || !sym__offset_to_vaddr(f->elf, off, &vaddr))
		return 0;
	GElf_Addr a = vaddr + f->bias;
	GElf_Off symoff = 0;
	GElf_Sym sym;
	const char *nm = dwfl_module_addrinfo(f->mod, a, &symoff, &sym, NULL, NULL, NULL);
	if (nm && nm[0]) {
		char dm[1024];
		/* A versioned symbol of the dynamic table ("malloc@@GLIBC_2.2.5") is named without
		 * its version. */
		const char *at = strchr(nm, '@');
		if (at && at != nm) {
			snprintf(dm, sizeof(dm), "%.*s", (int)(at - nm), nm);
			nm = dm;
		}
		char dd[1024];
		out->name = sym__keep(s, sym_demangle(nm, dd, sizeof(dd)) ? dd : nm);
		if (!out->name)
			return -ENOMEM;
		out->name_offset = symoff;
	}
	int lineno = 0;
	const char *src = NULL;
	Dwfl_Line *line = dwfl_module_getsrc(f->mod, a);
	if (line)
		src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	else
		src = sym__src_by_cu_scan(f->mod, a, &lineno);
	if (src && lineno > 0) {
		out->src_file = sym__keep(s, src);
		if (!out->src_file)
			return -ENOMEM;
		out->src_line = (uint32_t)lineno;
	}
	return 0;
}

/* Seeded under the index's seed: addresses come from the file, which must not choose
 * collisions (u64index keeps probes bounded should it try). */
static uint64_t sym__hash(uint32_t pid, uint64_t addr, uint64_t seed)
{
	return u64map_mix(addr ^ u64map_mix(pid, seed), seed);
}

static uint64_t sym__entry_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct sym__entry *e = &((const struct sym_resolver *)ctx)->ents[i];
	return sym__hash(e->pid, e->addr, seed);
}

/* Keeps the answer for (pid, addr), whose hash is h; an answer not kept (out of memory) is
 * only asked again. */
static void sym__keep_answer(struct sym_resolver *s, uint32_t pid, uint64_t addr, uint64_t h,
			     const struct sym_info *info)
{
	if (s->n_ents == s->cap_ents) {
		if (s->cap_ents > UINT32_MAX / 4)
			return;
		uint32_t nc = s->cap_ents ? 2 * s->cap_ents : 1024;
		struct sym__entry *p = realloc(s->ents, (size_t)nc * sizeof(*p));
		if (!p)
			return;
		s->ents = p;
		s->cap_ents = nc;
	}
	s->ents[s->n_ents] = (struct sym__entry){.addr = addr, .pid = pid, .info = *info};
	if (u64index_add(&s->index, s->n_ents, h) == 0)
		s->n_ents++;
}

/* Two files mapped over the same addresses of one process at different times (a library
 * closed, another opened where it was): an address there is named from one of them whatever
 * the time of the record that holds it, so the other's functions (call stacks, function
 * records) may carry the wrong names. Said once per pair, three pairs at most. */
static void sym__warn_reused(struct sym_resolver *s)
{
	const struct trcfile_module *m;
	size_t n = trcfile_reader_modules(s->r, &m), said = 0;
	for (size_t i = 0; s->warn && i < n && said < 3; i++) {
		for (size_t j = i + 1; j < n && m[j].pid == m[i].pid && m[j].start < m[i].end &&
				       said < 3;
		     j++) {
			if (!strcmp(m[i].path, m[j].path))
				continue;
			char msg[1024];
			snprintf(msg, sizeof(msg),
				 "pid %u mapped %s and %s over the same addresses at different "
				 "times: functions there are named from one of them",
				 m[i].pid, m[i].path, m[j].path);
			s->warn(s->warn_ctx, msg);
			said++;
			break;
		}
	}
}

struct sym_resolver *sym_resolver_new(const struct trcfile_reader *r, sym_warn_fn warn,
				      void *warn_ctx)
{
	struct sym_resolver *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->r = r;
	s->warn = warn;
	s->warn_ctx = warn_ctx;
	u64index_init(&s->index, sym__entry_hash, s);
	elf_version(EV_CURRENT);
	sym__warn_reused(s);
	return s;
}

void sym_resolver_free(struct sym_resolver *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_files; i++) {
		if (s->files[i].dwfl)
			dwfl_end(s->files[i].dwfl);
		free(s->files[i].path);
	}
	free(s->files);
	for (size_t i = 0; i < s->n_strs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->ents);
	u64index_destroy(&s->index);
	free(s);
}

int sym_resolve(struct sym_resolver *s, uint32_t pid, uint64_t addr, struct sym_info *out)
{
	uint64_t h = sym__hash(pid, addr, u64index_seed(&s->index));
	uint32_t e;
	for (size_t pos = u64index_start(&s->index, h);
	     (e = u64index_next(&s->index, &pos)) != U64INDEX_END;) {
		if (s->ents[e].addr == addr && s->ents[e].pid == pid) {
			*out = s->ents[e].info;
			return 0;
		}
	}
	memset(out, 0, sizeof(*out));
	const struct trcfile_module *m = trcfile_reader_module(s->r, pid, addr);
	int err = 0;
	if (m) {
		const char *base = strrchr(m->path, '/');
		out->module = m;
		out->module_offset = addr - m->start + m->offset;
		out->module_base = base ? base + 1 : m->path;
		err = sym__lookup(s, sym__file_get(s, m), out->module_offset, out);
	}
	if (err)
		return err;
	sym__keep_answer(s, pid, addr, h, out);
	return 0;
}

const char *sym_display(struct sym_resolver *s, uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	struct sym_info si;
	if (len == 0)
		return buf;
	sym_resolve(s, pid, addr, &si);
	if (si.name)
		snprintf(buf, len, "%s", si.name);
	else if (si.module)
		snprintf(buf, len, "%s+0x%llx", si.module_base,
			 (unsigned long long)si.module_offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	return buf;
}
