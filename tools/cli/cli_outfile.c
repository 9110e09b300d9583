/* cli_outfile.c - output files written whole or not at all (rules in cli_outfile.h).
 *
 * Why a temporary renamed over the name, and not open(O_TRUNC): a command that fails half-way
 * (an input that cannot be read, a damaged chunk, a full disk) must leave the file the user
 * named as it was, and one that is killed must leave nothing beside it. Why not always: a
 * rename replaces the directory entry, so a symlink would become a file, a file of several
 * links would be parted from its other names, and a device (/dev/stdout as root) would be
 * replaced; those are followed (symlinks) or written in place (the rest).
 *
 * The temporary is O_TMPFILE in the name's directory (no name until commit: nothing to leave
 * behind), reopened by writers through /proc/self/fd/N and linked with linkat(2) from there
 * (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH). A file system without O_TMPFILE, or no /proc,
 * falls back to a named temporary, NAME.TAG.XXXXXX, with NAME cut to fit NAME_MAX. A name
 * that exists is replaced through a second name (NAME.new.XXXXXX: link, then rename, since
 * linkat(2) does not replace), which a kill between those two calls would leave; a new name is
 * linked at once.
 *
 * Threads: the caller's; no shared state.
 */
#include "cli_outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static int cli__outfile_fail(char *msg, size_t msg_len, int err, const char *what, const char *why)
{
	if (msg && msg_len) {
		if (what)
			snprintf(msg, msg_len, "%s: %s", what, why ? why : strerror(-err));
		else
			snprintf(msg, msg_len, "%s", why ? why : strerror(-err));
	}
	return err;
}

/* A temporary's name beside o->name: NAME.TAG.XXXXXX, NAME cut so that it fits NAME_MAX. */
static void cli__outfile_tmp_name(const struct cli_outfile *o, const char *tag, char *out)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t rnd[6];
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t x = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (uint8_t)(x >> (8 * i));
	}
	char sfx[7];
	for (size_t i = 0; i < 6; i++)
		sfx[i] = digits[rnd[i] % (sizeof(digits) - 1)];
	sfx[6] = 0;
	int keep = NAME_MAX - (int)strlen(tag) - 8; /* ".TAG.XXXXXX" */
	snprintf(out, NAME_MAX + 1, "%.*s.%s.%s", keep > 0 ? keep : 0, o->name, tag, sfx);
}

/* Why a file at the name is not replaced, or NULL when it can be. */
static const char *cli__outfile_not_replaced(const struct stat *st, char *buf, size_t n)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file: left as written";
	if (st->st_nlink > 1) {
		snprintf(buf, n, "it has %ju links: replacing it would part them",
			 (uintmax_t)st->st_nlink);
		return buf;
	}
	return NULL;
}

/* Splits o->resolved into its directory (opened as o->dir_fd) and o->name. */
static int cli__outfile_dir(struct cli_outfile *o, char *msg, size_t msg_len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(o->resolved, '/');
	const char *base = slash ? slash + 1 : o->resolved;
	if (!*base || strlen(base) > NAME_MAX || !strcmp(base, ".") || !strcmp(base, ".."))
		return cli__outfile_fail(msg, msg_len, -EISDIR, o->resolved, NULL);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == o->resolved)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - o->resolved), o->resolved);
	snprintf(o->name, sizeof(o->name), "%s", base);
	o->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dir_fd < 0)
		return cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
	return 0;
}

/* The temporary in o->dir_fd: unnamed when the file system and /proc allow. */
static int cli__outfile_temp(struct cli_outfile *o, mode_t mode, const char *tag, char *msg,
			     size_t msg_len)
{
	int fd = openat(o->dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	if (fd >= 0) {
		snprintf(o->path, sizeof(o->path), "/proc/self/fd/%d", fd);
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(o->path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino) {
			o->fd = fd;
			return 0;
		}
		close(fd); /* no /proc to reopen and link it through */
	} else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT) {
		return cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
	}
	for (int tries = 0; tries < 100; tries++) {
		cli__outfile_tmp_name(o, tag, o->tmp);
		fd = openat(o->dir_fd, o->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd >= 0) {
			const char *slash = strrchr(o->resolved, '/');
			snprintf(o->path, sizeof(o->path), "%.*s%s",
				 slash ? (int)(slash + 1 - o->resolved) : 0, o->resolved, o->tmp);
			o->fd = fd;
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	int err = -errno;
	o->tmp[0] = 0;
	return cli__outfile_fail(msg, msg_len, err, o->resolved, NULL);
}

int cli_outfile_open(struct cli_outfile *o, int dir_fd, const char *path, mode_t mode,
		     unsigned flags, const struct stat *expect, const char *tag, bool open_in_place,
		     char *msg, size_t msg_len)
{
	memset(o, 0, sizeof(*o));
	o->fd = o->dir_fd = -1;
	o->flags = flags;
	if (msg && msg_len)
		msg[0] = 0;
	if (strlen(path) >= sizeof(o->resolved))
		return cli__outfile_fail(msg, msg_len, -ENAMETOOLONG, path, NULL);
	snprintf(o->resolved, sizeof(o->resolved), "%s", path);
	struct stat st;
	bool exists = true;
	char why_buf[96];
	if (dir_fd != AT_FDCWD) {
		/* One entry of a directory the caller opened: replaced, never followed. */
		const char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		if (!*base || strlen(base) > NAME_MAX)
			return cli__outfile_fail(msg, msg_len, -EINVAL, path, NULL);
		snprintf(o->name, sizeof(o->name), "%s", base);
		o->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
		if (o->dir_fd < 0)
			return cli__outfile_fail(msg, msg_len, -errno, path, NULL);
		if (fstatat(dir_fd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT) {
				int err = cli__outfile_fail(msg, msg_len, -errno, path, NULL);
				cli_outfile_abort(o);
				return err;
			}
			exists = false;
		} else if (S_ISDIR(st.st_mode)) {
			/* Checked now: its rename would fail only at commit. */
			cli_outfile_abort(o);
			return cli__outfile_fail(msg, msg_len, -EISDIR, path, NULL);
		}
		o->how = exists && !cli__outfile_not_replaced(&st, why_buf, sizeof(why_buf))
				 ? CLI_OUTFILE_REPLACE
				 : CLI_OUTFILE_NEW;
	} else {
		bool unresolved = false;
		if (lstat(path, &st) != 0) {
			if (errno != ENOENT)
				return cli__outfile_fail(msg, msg_len, -errno, path, NULL);
			exists = false;
		} else if (S_ISLNK(st.st_mode)) {
			/* What it points to; a link that resolves to no path (dangling, or a
			 * /proc/self/fd link to a pipe) is written through, in place. */
			char real[PATH_MAX];
			if (realpath(path, real) && lstat(real, &st) == 0)
				snprintf(o->resolved, sizeof(o->resolved), "%s", real);
			else
				unresolved = true;
		}
		const char *why = unresolved ? "a symlink to no file: left as written"
				  : exists
					  ? cli__outfile_not_replaced(&st, why_buf, sizeof(why_buf))
					  : NULL;
		if (expect && !exists)
			return cli__outfile_fail(msg, msg_len, -ESTALE, NULL,
						 "it is no longer there");
		if (expect && !why && (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino))
			return cli__outfile_fail(msg, msg_len, -ESTALE, NULL,
						 "the name no longer names the file written");
		if (why && (flags & CLI_OUTFILE_REPLACE_ONLY))
			return cli__outfile_fail(
				msg, msg_len, !unresolved && S_ISREG(st.st_mode) ? -EMLINK : -EXDEV,
				NULL, why);
		o->how = !exists ? CLI_OUTFILE_NEW
			 : why	 ? CLI_OUTFILE_IN_PLACE
				 : CLI_OUTFILE_REPLACE;
		if (o->how == CLI_OUTFILE_IN_PLACE)
			goto in_place;
		int err = cli__outfile_dir(o, msg, msg_len);
		if (err) {
			cli_outfile_abort(o);
			return err;
		}
	}
	if (o->how == CLI_OUTFILE_REPLACE) {
		/* Replaced only where open(2) would have written it: a rename needs only the
		 * directory, and would take a read-only file away. */
		if (faccessat(o->dir_fd, o->name, W_OK, AT_EACCESS) != 0) {
			int err = cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
			cli_outfile_abort(o);
			return err;
		}
		o->was = st;
	}
	int err = cli__outfile_temp(o, o->how == CLI_OUTFILE_REPLACE ? 0600 : mode, tag, msg,
				    msg_len);
	if (!err)
		return 0;
	cli_outfile_abort(o);
	/* A directory we may not write in, beside a file we may: written in place, as before. */
	if (dir_fd != AT_FDCWD || (flags & CLI_OUTFILE_REPLACE_ONLY) ||
	    (err != -EACCES && err != -EPERM && err != -EROFS))
		return err;
	o->how = CLI_OUTFILE_IN_PLACE;
in_place:
	snprintf(o->path, sizeof(o->path), "%s", path);
	if (open_in_place) {
		o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
		if (o->fd < 0)
			return cli__outfile_fail(msg, msg_len, -errno, path, NULL);
	}
	if (msg && msg_len)
		msg[0] = 0;
	return 0;
}

/* Whether an extended attribute that cannot be copied may be left: the security modules'
 * and the privileged namespaces' are set by policy, not by the file's owner. */
static bool cli__outfile_xattr_optional(const char *name)
{
	return !strncmp(name, "security.", 9) || !strncmp(name, "trusted.", 8);
}

/* The replaced file's owner, group, extended attributes (its ACL) and mode, onto o->fd. */
static int cli__outfile_keep_attrs(struct cli_outfile *o, char *msg, size_t msg_len)
{
	const struct stat *was = &o->was;
	struct stat now;
	if (fstat(o->fd, &now) != 0)
		return cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
	if ((now.st_uid != was->st_uid || now.st_gid != was->st_gid) &&
	    fchown(o->fd, was->st_uid, was->st_gid) != 0) {
		char why[160];
		snprintf(why, sizeof(why), "cannot give its copy the owner uid %ju gid %ju: %s",
			 (uintmax_t)was->st_uid, (uintmax_t)was->st_gid, strerror(errno));
		return cli__outfile_fail(msg, msg_len, -EPERM, NULL, why);
	}
	ssize_t n = llistxattr(o->resolved, NULL, 0);
	char *names = n > 0 ? malloc((size_t)n) : NULL;
	if (n > 0 && names)
		n = llistxattr(o->resolved, names, (size_t)n);
	int err = n > 0 && !names ? -ENOMEM : 0;
	for (ssize_t i = 0; !err && names && i < n; i += (ssize_t)strlen(names + i) + 1) {
		const char *nm = names + i;
		ssize_t len = lgetxattr(o->resolved, nm, NULL, 0);
		void *val = len > 0 ? malloc((size_t)len) : NULL;
		if (len > 0 && val)
			len = lgetxattr(o->resolved, nm, val, (size_t)len);
		int e = len < 0 ? errno : len > 0 && !val ? ENOMEM : 0;
		if (!e && fsetxattr(o->fd, nm, val ? val : "", (size_t)(len > 0 ? len : 0), 0) != 0)
			e = errno;
		free(val);
		if (e && !cli__outfile_xattr_optional(nm)) {
			char why[400];
			snprintf(why, sizeof(why), "cannot copy its extended attribute %s: %s", nm,
				 strerror(e));
			err = cli__outfile_fail(msg, msg_len, -e, NULL, why);
		}
	}
	free(names);
	if (!err && fchmod(o->fd, was->st_mode & 07777) != 0)
		err = cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
	return err;
}

/* Gives the unnamed temporary a name beside o->name (o->tmp). */
static int cli__outfile_link_tmp(struct cli_outfile *o)
{
	for (int tries = 0; tries < 100; tries++) {
		cli__outfile_tmp_name(o, "new", o->tmp);
		if (linkat(AT_FDCWD, o->path, o->dir_fd, o->tmp, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	int err = -errno;
	o->tmp[0] = 0;
	return err;
}

int cli_outfile_commit(struct cli_outfile *o, char *msg, size_t msg_len)
{
	if (o->how == CLI_OUTFILE_IN_PLACE) {
		int err = o->fd >= 0 && close(o->fd) != 0 ? -errno : 0;
		o->fd = -1;
		return err ? cli__outfile_fail(msg, msg_len, err, o->path, NULL) : 0;
	}
	if (o->fd < 0 || o->dir_fd < 0)
		return cli__outfile_fail(msg, msg_len, -EBADF, o->resolved, NULL);
	int err = o->how == CLI_OUTFILE_REPLACE ? cli__outfile_keep_attrs(o, msg, msg_len) : 0;
	if (!err && !(o->flags & CLI_OUTFILE_SYNCED) && fsync(o->fd) != 0 && errno != EINVAL)
		err = cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
	bool named = o->tmp[0] != 0;
	if (!err && !named && o->how == CLI_OUTFILE_NEW &&
	    linkat(AT_FDCWD, o->path, o->dir_fd, o->name, AT_SYMLINK_FOLLOW) == 0)
		goto placed; /* a new name: linked there at once, no temporary name */
	if (!err && !named && (err = cli__outfile_link_tmp(o)) != 0)
		cli__outfile_fail(msg, msg_len, err, o->resolved, NULL);
	if (!err && renameat(o->dir_fd, o->tmp, o->dir_fd, o->name) != 0)
		err = cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL);
	if (err) {
		cli_outfile_abort(o);
		return err;
	}
placed:
	o->tmp[0] = 0;
	/* The rename on disk with the file: best effort (the file itself is synced). */
	fsync(o->dir_fd);
	err = close(o->fd) != 0 ? cli__outfile_fail(msg, msg_len, -errno, o->resolved, NULL) : 0;
	o->fd = -1;
	close(o->dir_fd);
	o->dir_fd = -1;
	return err;
}

void cli_outfile_abort(struct cli_outfile *o)
{
	if (o->tmp[0] && o->dir_fd >= 0)
		unlinkat(o->dir_fd, o->tmp, 0);
	o->tmp[0] = 0;
	if (o->fd >= 0)
		close(o->fd);
	if (o->dir_fd >= 0)
		close(o->dir_fd);
	o->fd = o->dir_fd = -1;
}
