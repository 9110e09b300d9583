/* symbols.h - function names for the addresses of a trace (FUNC_ENTER/EXIT), from the symbol
 * tables and debug info of the modules the trace recorded, through elfutils (libdwfl).
 *
 * Purpose: `trace-dump events`, `chrome` and the summary show "fib" (C++ names demangled) and
 * "prog.c:12" instead of "prog+0x11e0". A module record names a file, the mapping's start and
 * file offset, and (since format 1.1) the file's build-id. At dump time each file is opened
 * once; when it is gone, cannot be read, or its build-id differs from the recorded one, the
 * resolver says so once (through the caller's warn callback: only tools print) and the
 * addresses in it keep module+offset. A file without a symbol table (stripped) is said once
 * too; its exported (dynamic) symbols still name their functions.
 *
 * How an address is found: file offset = addr - start + offset (the module record), then the
 * PT_LOAD segment holding that offset gives the ELF address the symbol tables use; libdwfl
 * looks it up (.symtab, else .dynsym; .debug_line for file:line, separate debug files found
 * by build-id in /usr/lib/debug). Results are cached per (pid, address): a trace calls the
 * same few functions millions of times.
 *
 * Ownership: strings returned live as long as the resolver. Threads: one thread per resolver.
 */
#ifndef TRC_SYMBOLS_H
#define TRC_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trcfile.h"

struct sym_resolver;

/* Called once per problem file with a one-line message (no newline). */
typedef void (*sym_warn_fn)(void *ctx, const char *msg);

/* What is known of one address. name is NULL when no symbol covers it; module NULL when no
 * module record covers it (then nothing else is known). */
struct sym_info {
	const struct trcfile_module *module;
	uint64_t module_offset; /* addr - start + offset: the file offset */
	const char *module_base; /* the file name without its directory */
	const char *name; /* demangled function name, or NULL */
	uint64_t name_offset; /* addr - the symbol's start */
	const char *src_file; /* source file (as in the debug info), or NULL */
	uint32_t src_line; /* 0 when src_file is NULL */
};

/* A resolver over the modules of r (which must outlive it). warn may be NULL. Returns NULL
 * when out of memory. */
struct sym_resolver *sym_resolver_new(const struct trcfile_reader *r, sym_warn_fn warn,
				      void *warn_ctx);
void sym_resolver_free(struct sym_resolver *s);

/* Resolves addr of process pid into *out (always filled; fields unknown are NULL/0). Returns
 * 0, or -ENOMEM (then *out holds at most the module). */
int sym_resolve(struct sym_resolver *s, uint32_t pid, uint64_t addr, struct sym_info *out);

/* The display name of addr: the function's name, else "module+0xOFF", else "0xADDR", written
 * into buf (cut to len - 1 bytes, always terminated); returns buf. */
const char *sym_display(struct sym_resolver *s, uint32_t pid, uint64_t addr, char *buf, size_t len);

/* Demangles an Itanium C++ name into buf (cut, terminated); returns false and leaves buf
 * untouched when name is not a mangled name. */
bool sym_demangle(const char *name, char *buf, size_t len);

#endif /* TRC_SYMBOLS_H */
