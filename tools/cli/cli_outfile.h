/* cli_outfile.h - an output file written whole or not at all, in both commands: trace-run's
 * end-of-run compaction, trace-dump compact, the exporters' -o OUT and parquet's tables.
 *
 * What is at the name decides (cli_outfile_open):
 *   nothing            a new file, written unnamed (O_TMPFILE) beside it and linked at commit
 *   a regular file     a copy written unnamed beside it, given its owner, group, mode and
 *   of one link        extended attributes (its ACL) and renamed over it at commit
 *   a symlink          (by path) what it points to, by these rules: the link stays a link
 *   anything else      (by path) written in place, as open(2) would: a device, a FIFO, a file
 *                      of several links (renaming over one name would part them); with
 *                      CLI_OUTFILE_REPLACE_ONLY: refused, with the reason
 * An unnamed file has no name until commit, so a command killed before it leaves nothing
 * behind; where the file system takes no O_TMPFILE (or /proc is not mounted) the temporary is a
 * named NAME.TAG.XXXXXX beside it instead (NAME cut short to fit NAME_MAX). The commit syncs the
 * file (unless the caller did) and, after the rename, the directory.
 *
 * Errors: actions return 0 or -errno with one line in msg naming the file. Only tools/ use it.
 * Threads: one outfile belongs to one thread; no shared state.
 */
#ifndef TRC_CLI_OUTFILE_H
#define TRC_CLI_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

enum cli_outfile_how {
	CLI_OUTFILE_NEW, /* nothing at the name: linked there at commit */
	CLI_OUTFILE_REPLACE, /* a regular file of one link: renamed over at commit */
	CLI_OUTFILE_IN_PLACE, /* written where the name points (a device, a FIFO, links) */
};

/* Refuse what would be written in place (-EXDEV, msg saying why): the compaction, which must
 * never leave a half-written trace. */
#define CLI_OUTFILE_REPLACE_ONLY 1u
/* The caller syncs the file itself before commit (its writer's close does). */
#define CLI_OUTFILE_SYNCED 2u

struct cli_outfile {
	enum cli_outfile_how how;
	int fd; /* the file being written, open for writing (-1: IN_PLACE opened by path) */
	int dir_fd; /* the directory the name is in (-1: IN_PLACE) */
	unsigned flags;
	char name[NAME_MAX + 1]; /* the last component of the name, in dir_fd */
	char tmp[NAME_MAX + 1]; /* a named temporary in dir_fd; "" when unnamed */
	/* A path that opens the file being written (a writer that takes paths opens it again):
	 * /proc/self/fd/N for an unnamed file, DIR/TMP for a named one, the name given for
	 * IN_PLACE. */
	char path[PATH_MAX + 32];
	/* The name resolved (symlinks followed), for reading what is there. */
	char resolved[PATH_MAX];
	struct stat was; /* REPLACE: the file it replaces */
};

/* Prepares to write path. dir_fd AT_FDCWD: path is what the user typed (a symlink is
 * followed, see above); a directory fd: path is one name in it, and whatever entry is there
 * (a symlink, a FIFO, a file of several links) is replaced at commit, never followed or opened.
 * mode: a new file's (less the umask). expect (may be NULL): the file must be this one (dev,
 * ino: a regular file the caller wrote), else -ESTALE. tag names a named temporary
 * ("compacting"). IN_PLACE opens path O_TRUNC only with open_in_place. 0 or -errno with msg. */
int cli_outfile_open(struct cli_outfile *o, int dir_fd, const char *path, mode_t mode,
		     unsigned flags, const struct stat *expect, const char *tag, bool open_in_place,
		     char *msg, size_t msg_len);

/* Puts the file in place (REPLACE: the old file's owner, mode and extended attributes first),
 * closes it. IN_PLACE: closes the fd it opened. 0 or -errno with msg; on failure the name is as
 * it was before open and nothing is left (as cli_outfile_abort). */
int cli_outfile_commit(struct cli_outfile *o, char *msg, size_t msg_len);

/* Drops what was written (a named temporary is unlinked), closes. The name keeps what it had;
 * IN_PLACE: what was written stays (it cannot be taken back). Accepts an outfile already
 * committed or aborted. */
void cli_outfile_abort(struct cli_outfile *o);

#endif /* TRC_CLI_OUTFILE_H */
