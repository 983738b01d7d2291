/* SPDX-License-Identifier: MIT */
/*
 * A static copy of librangelock in a plugin (plugin.c) must not crash a
 * thread that used it and exits after the plugin was dlclose()d: the
 * thread's slot key (and, with the POSIX backend, its pipe key) has a
 * destructor in the plugin's code.  The copy keeps its object loaded from
 * the moment it leaves such a destructor pending (its first slot claim, its
 * first wait), so dlclose() does not unmap it.
 *   host PLUGIN f|w|n LOADED
 *     f: the worker reads fast; w: it waits interruptibly (sleeping);
 *     n: neither.  LOADED: 1 if the plugin must still be loaded after
 *     dlclose(), 0 if dlclose() must unload it (a copy pins its object
 *     only when it must).
 * Exit 0 when right; a crash at the worker's exit is the bug.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int used = -1, closed;
static int (*plugin_use)(int);
static int what;

static void *worker(void *arg)
{
	int ok = plugin_use(what);

	(void)arg;
	pthread_mutex_lock(&mu);
	used = ok;
	pthread_cond_broadcast(&cv);
	while (!closed)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL; /* the key destructors run now, after dlclose() */
}

int main(int argc, char **argv)
{
	pthread_t th;
	void *h;
	int loaded;

	alarm(60); /* watchdog */
	if (argc != 4 || !argv[2][0]) {
		fprintf(stderr, "usage: host PLUGIN f|w|n LOADED\n");
		return 2;
	}
	what = argv[2][0];
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*(void **)&plugin_use = dlsym(h, "plugin_use"))) {
		fprintf(stderr, "host: %s\n", dlerror());
		return 1;
	}
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	pthread_mutex_lock(&mu);
	while (used < 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	if (dlclose(h)) {
		fprintf(stderr, "host: dlclose: %s\n", dlerror());
		return 1;
	}
	loaded = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) != NULL;
	pthread_mutex_lock(&mu);
	closed = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	printf("host: %c: plugin used %d, still loaded after dlclose %d; the worker exited\n",
	       what, used, loaded);
	if (used != 1)
		return 1;
	return loaded != atoi(argv[3]);
}
