/* dump_report_assets.c - the report page's script and style sheet (dump_report.js,
 * dump_report.css), built into trace-dump so that a report needs no file beside it and no
 * network: the assembler copies each file in (.incbin, relative to the top of the tree, where
 * make runs) and ends it with a NUL byte. The Makefile names both files as prerequisites of
 * this object. Neither may hold "</script" or "</style" (test_report checks the page).
 */
#include "dump_report.h"

__asm__(".section .rodata\n"
	".global dump_report_js\n"
	".type dump_report_js, @object\n"
	"dump_report_js:\n"
	".incbin \"tools/dump/dump_report.js\"\n"
	".byte 0\n"
	".size dump_report_js, . - dump_report_js\n"
	".global dump_report_css\n"
	".type dump_report_css, @object\n"
	"dump_report_css:\n"
	".incbin \"tools/dump/dump_report.css\"\n"
	".byte 0\n"
	".size dump_report_css, . - dump_report_css\n"
	".previous\n");
