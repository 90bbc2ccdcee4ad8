/*
 * slowsync.so: make every fsync(2) and fdatasync(2) of a process last at
 * least SLOWSYNC_US microseconds (default 1000), for compare-models.sh's
 * slow-disk model: cloud block storage, or a drive without power-loss
 * protection, flushes in 0.5 to 2 ms. The real call runs first and the
 * shim then sleeps away the rest, so it adds latency and no CPU.
 *
 *   cc -O2 -shared -fPIC -o slowsync.so slowsync.c -ldl
 *   LD_PRELOAD=$PWD/slowsync.so SLOWSYNC_US=1000 postgres ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static long floor_ns(void) {
	static long ns = -1;
	if (ns < 0) {
		const char *v = getenv("SLOWSYNC_US");
		ns = (v && *v ? atol(v) : 1000) * 1000L;
	}
	return ns;
}

static long now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* pad sleeps until floor_ns() has passed since start. */
static void pad(long start) {
	long left = floor_ns() - (now_ns() - start);
	if (left > 0) {
		struct timespec t = {left / 1000000000L, left % 1000000000L};
		while (nanosleep(&t, &t) != 0) {
		}
	}
}

int fsync(int fd) {
	static int (*next)(int);
	if (!next) next = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	long start = now_ns();
	int rc = next(fd);
	pad(start);
	return rc;
}

int fdatasync(int fd) {
	static int (*next)(int);
	if (!next) next = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	long start = now_ns();
	int rc = next(fd);
	pad(start);
	return rc;
}
