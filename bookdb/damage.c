/* bookdb/damage.c — the books open in this process, their maps and liblmdb's
 * code, for saying which book LMDB stopped on (see damage.h). */
#include "bookdb/damage.h"
#include "bookdb/bookdb_priv.h"

#include <link.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One open environment. state: 0 free, 1 being written, 2 in use (read by a
 * signal handler without a lock: fields are set before state turns 2). */
typedef struct {
	atomic_int state;
	const BookDB *owner;
	uintptr_t lo, hi; /* the map */
	bool output;      /* check --repair's new book: not a suspect */
	char dir[BOOKDB_DIR_MAX + 1];
} Slot;

#define SLOTS 32
#define CODE_RANGES 4

static Slot g_slots[SLOTS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_code_once = PTHREAD_ONCE_INIT;
static uintptr_t g_code[CODE_RANGES][2]; /* liblmdb's executable segments */
static int g_ncode;
static BookDamageFn g_fn;
static char g_partial[BOOKDB_PATH_LEN];
static atomic_bool g_partial_set;
/* "A or B or ...": the answer when several books are open. */
static char g_several[SLOTS * 64];

static int find_lmdb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "liblmdb")) return 0;
	for (int i = 0; i < info->dlpi_phnum && g_ncode < CODE_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
		g_code[g_ncode][0] = info->dlpi_addr + ph->p_vaddr;
		g_code[g_ncode][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		g_ncode++;
	}
	return 1;
}

/* liblmdb's code, found once (none when LMDB is linked statically: then only
 * faults inside a map count). */
static void find_code(void)
{
	dl_iterate_phdr(find_lmdb, NULL);
}

static void on_assert(MDB_env *env, const char *msg)
{
	const BookDB *db = mdb_env_get_userctx(env);
	const char *dir = db && db->dir ? db->dir : "?";
	bookdb_damage_cleanup();
	if (g_fn) g_fn(dir, msg);
	char line[BOOKDB_PATH_LEN + 512];
	size_t n = bookdb_damage_format(line, sizeof line, NULL, dir, msg);
	if (write(STDERR_FILENO, line, n) < 0) { /* nothing else to say it with */
	}
	abort();
}

void bookdb_damage_on(BookDamageFn fn)
{
	g_fn = fn;
}

static Slot *slot_of(const BookDB *db)
{
	for (int i = 0; i < SLOTS; i++)
		if (atomic_load(&g_slots[i].state) == 2 && g_slots[i].owner == db)
			return &g_slots[i];
	return NULL;
}

/*
 * The map of dir/data.mdb in this process ([*lo, *hi), 0 when none is found):
 * the mapping of that file's inode in /proc/self/maps of mapsize bytes
 * (mdb_env_info's me_mapaddr is only set for a fixed map).
 */
static void find_map(const char *dir, size_t mapsize, uintptr_t *lo, uintptr_t *hi)
{
	char path[BOOKDB_PATH_LEN], line[BOOKDB_PATH_LEN + 200];
	struct stat st;
	*lo = *hi = 0;
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	FILE *f = stat(path, &st) == 0 ? fopen("/proc/self/maps", "re") : NULL;
	if (!f) return;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b, off, ino;
		unsigned maj, mnr;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &a, &b, perms, &off, &maj, &mnr,
		           &ino) != 7)
			continue;
		if (ino != (unsigned long)st.st_ino || off != 0 || b - a != mapsize) continue;
		*lo = a;
		*hi = b;
	}
	fclose(f);
}

void bdb_damage_watch(BookDB *db, bool opened)
{
	pthread_once(&g_code_once, find_code);
	mdb_env_set_userctx(db->env, db);
	mdb_env_set_assert(db->env, on_assert);
	/* Not mapped before mdb_env_open (nor can mdb_env_info be called then). */
	MDB_envinfo info = {0};
	if (opened && mdb_env_info(db->env, &info) != 0) return;
	pthread_mutex_lock(&g_lock);
	Slot *s = slot_of(db);
	for (int i = 0; !s && i < SLOTS; i++)
		if (atomic_load(&g_slots[i].state) == 0) s = &g_slots[i];
	if (s) { /* no slot left: the book is named only through the code range */
		atomic_store(&s->state, 1);
		s->owner = db;
		uintptr_t lo = 0, hi = 0;
		if (opened) find_map(db->dir, info.me_mapsize, &lo, &hi);
		s->lo = lo;
		s->hi = hi;
		snprintf(s->dir, sizeof s->dir, "%s", db->dir);
		atomic_store(&s->state, 2);
	}
	pthread_mutex_unlock(&g_lock);
}

void bdb_damage_unwatch(const BookDB *db)
{
	pthread_mutex_lock(&g_lock);
	Slot *s = slot_of(db);
	if (s) atomic_store(&s->state, 0);
	pthread_mutex_unlock(&g_lock);
}

void bdb_damage_output(const BookDB *db, const char *partial)
{
	pthread_mutex_lock(&g_lock);
	Slot *s = db ? slot_of(db) : NULL;
	if (s) s->output = true;
	atomic_store(&g_partial_set, false);
	if (partial) {
		snprintf(g_partial, sizeof g_partial, "%s", partial);
		atomic_store(&g_partial_set, true);
	}
	pthread_mutex_unlock(&g_lock);
}

/* Appends s to buf[*n] within cap (NUL kept). */
static void put(char *buf, size_t cap, size_t *n, const char *s)
{
	while (*s && *n + 1 < cap) buf[(*n)++] = *s++;
	buf[*n] = 0;
}

const char *bookdb_damage_book(const void *addr, const void *pc)
{
	uintptr_t a = (uintptr_t)addr, p = (uintptr_t)pc;
	for (int i = 0; i < SLOTS; i++) {
		Slot *s = &g_slots[i];
		if (atomic_load(&s->state) == 2 && a >= s->lo && a < s->hi) return s->dir;
	}
	bool in_lmdb = false;
	for (int i = 0; i < g_ncode; i++) in_lmdb |= p >= g_code[i][0] && p < g_code[i][1];
	if (!in_lmdb) return NULL;
	const char *one = NULL, *output = NULL;
	int suspects = 0;
	size_t n = 0;
	g_several[0] = 0;
	for (int i = 0; i < SLOTS; i++) {
		Slot *s = &g_slots[i];
		if (atomic_load(&s->state) != 2) continue;
		if (s->output) {
			output = s->dir;
			continue;
		}
		if (suspects++) put(g_several, sizeof g_several, &n, " or ");
		put(g_several, sizeof g_several, &n, s->dir);
		one = s->dir;
	}
	return suspects > 1 ? g_several : suspects ? one : output;
}

size_t bookdb_damage_format(char *buf, size_t cap, const char *cmd, const char *dir,
                            const char *how)
{
	size_t n = 0;
	if (cap < 2) return 0;
	buf[0] = 0;
	put(buf, cap, &n, "joseki: ");
	if (cmd && *cmd) {
		put(buf, cap, &n, cmd);
		put(buf, cap, &n, ": ");
	}
	put(buf, cap, &n, dir);
	put(buf, cap, &n,
	    ": the book's database file is damaged below its records (LMDB "
	    "stopped at a bad page: ");
	put(buf, cap, &n, how);
	put(buf, cap, &n, "); check cannot repair this: restore ");
	put(buf, cap, &n, dir);
	put(buf, cap, &n, " from a backup (docs/bookdb.md, \"A damaged book\")");
	/* The newline even when the line was cut. */
	if (n + 1 >= cap) n = cap - 2;
	buf[n++] = '\n';
	buf[n] = 0;
	return n;
}

void bookdb_damage_cleanup(void)
{
	if (!atomic_load(&g_partial_set)) return;
	static const char *const FILES[] = {"data.mdb", "lock.mdb", "writers.lock", "open.lock"};
	char p[BOOKDB_PATH_LEN + 32];
	for (size_t i = 0; i < sizeof FILES / sizeof *FILES; i++) {
		size_t n = 0;
		put(p, sizeof p, &n, g_partial);
		put(p, sizeof p, &n, "/");
		put(p, sizeof p, &n, FILES[i]);
		unlink(p);
	}
	rmdir(g_partial);
}
