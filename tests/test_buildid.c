/* test_buildid.c - the build-id of MODULE records in the file (FORMAT.md 1.2): written and read
 * back exactly, absent when not given (as in 1.0 files), kept by the reader's module table,
 * and a build-id longer than TRC_BUILD_ID_MAX refused by the writer. */
#include "test_trcfile_util.h"

static const uint8_t tb_id[20] = {0x7e, 0xbc, 0x65, 0xe5, 0x2f, 0x2b, 0xbe, 0xa4, 0x98, 0xb4,
				  0x04, 0x0f, 0xa9, 0x2f, 0x72, 0x38, 0x37, 0x7a, 0xab, 0xa9};

static struct trc_record tb_module(uint64_t start, const char *path, const uint8_t *id,
				   uint32_t id_len)
{
	struct trc_record r = {.type = TRC_REC_MODULE, .ts_ns = 1000 + start / 0x1000};
	r.module.pid = 7;
	r.module.start = start;
	r.module.end = start + 0x1000;
	r.module.offset = 0x1000;
	r.module.path = path;
	r.module.path_len = (uint32_t)strlen(path);
	r.module.build_id = id;
	r.module.build_id_len = id_len;
	return r;
}

Test(buildid, written_and_read_back, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[320];
	snprintf(path, sizeof(path), "%s/b.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	struct trc_record a = tb_module(0x400000, "/bin/with-id", tb_id, sizeof(tb_id));
	struct trc_record b = tb_module(0x800000, "/bin/without-id", NULL, 0);
	tu_add(m, &a);
	tu_add(m, &b);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 1), 0);
	tu_plan_free(&p);

	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(trcfile_reader_header(r)->version_minor, TRCFILE_VERSION_MINOR);
	const struct trcfile_module *ma = trcfile_reader_module(r, 7, 0x400010);
	const struct trcfile_module *mb = trcfile_reader_module(r, 7, 0x800010);
	cr_assert(ma && mb);
	cr_expect_str_eq(ma->path, "/bin/with-id");
	cr_expect_eq(ma->build_id_len, 20);
	cr_expect_arr_eq(ma->build_id, tb_id, sizeof(tb_id));
	cr_expect_str_eq(mb->path, "/bin/without-id");
	cr_expect_eq(mb->build_id_len, 0);

	struct trcfile_iter *it = trcfile_iter_new(r);
	struct trc_record rec;
	int n = 0;
	while (trcfile_iter_next(it, &rec, NULL) == 1) {
		if (rec.type != TRC_REC_MODULE)
			continue;
		if (n++ == 0) {
			cr_expect_eq(rec.module.build_id_len, 20);
			cr_expect_arr_eq(rec.module.build_id, tb_id, sizeof(tb_id));
		} else {
			cr_expect_eq(rec.module.build_id_len, 0);
			cr_expect_null(rec.module.build_id);
		}
	}
	cr_expect_eq(n, 2);
	trcfile_iter_free(it);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

Test(buildid, too_long_is_refused, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[320];
	snprintf(path, sizeof(path), "%s/b.trc", dir);
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_META, 7, 0);
	cr_assert_not_null(s);
	uint8_t big[TRC_BUILD_ID_MAX + 1] = {1};
	struct trc_record rec = tb_module(0x400000, "/bin/x", big, sizeof(big));
	cr_expect_eq(trcfile_stream_append(s, &rec), -EINVAL);
	rec = tb_module(0x400000, "/bin/x", NULL, 4);
	cr_expect_eq(trcfile_stream_append(s, &rec), -EINVAL, "a length without bytes");
	rec = tb_module(0x400000, "/bin/x", big, TRC_BUILD_ID_MAX);
	cr_expect_eq(trcfile_stream_append(s, &rec), 0, "the longest allowed");
	cr_expect_eq(trcfile_writer_close(w), 0);
	tu_rm_rf(dir);
}
