/*
 * tests/fuzz/fuzz_tmp.h — a target's scratch directory or file in /tmp,
 * removed when the fuzzer exits: a run that ends at its time or run limit
 * exits normally and leaves nothing behind (one killed still does).
 */
#ifndef TESTS_FUZZ_FUZZ_TMP_H
#define TESTS_FUZZ_FUZZ_TMP_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_tmp_path[128];
static int fuzz_tmp_dir;

static void fuzz_tmp_remove(void)
{
	if (!fuzz_tmp_dir) {
		unlink(fuzz_tmp_path);
		return;
	}
	DIR *d = opendir(fuzz_tmp_path);
	if (d) {
		struct dirent *e;
		char p[400];
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
			snprintf(p, sizeof p, "%s/%s", fuzz_tmp_path, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(fuzz_tmp_path);
}

/* Removes path at exit: a file, or a directory of files (is_dir) and then
 * the directory. */
static void fuzz_tmp_at_exit(const char *path, int is_dir)
{
	snprintf(fuzz_tmp_path, sizeof fuzz_tmp_path, "%s", path);
	fuzz_tmp_dir = is_dir;
	atexit(fuzz_tmp_remove);
}

#endif
