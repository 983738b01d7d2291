/* SPDX-License-Identifier: MIT */
/*
 * Keeping this copy of the library loaded.
 *
 * The library leaves pthread key destructors pending in threads: the fast
 * read's slot (fast_read.c), from a thread's first fast read to its exit,
 * and with the POSIX backend the thread's pipe (wait_posix.c), from its
 * first interruptible wait.  A destructor runs in this copy's code when the
 * thread exits, so that code must still be mapped then, even if whatever
 * loaded it was dlclose()d meanwhile:
 *   - the shared library is linked with -z nodelete (src/CMakeLists.txt);
 *   - a static copy linked into a program is never unloaded;
 *   - a static copy linked into a plugin (a dlopen()ed object built on the
 *     PIC librangelock.a) is unmapped by the plugin's last dlclose(), so
 *     the first key destructor made pins the containing object: dlopen()
 *     of its own name with RTLD_NOLOAD | RTLD_NODELETE (glibc, musl, the
 *     BSDs), a handle never closed.  A plugin that never reads fast and
 *     never waits interruptibly is not pinned: dlclose() unloads it as
 *     usual.
 * The object is found by walking the loaded objects (dl_iterate_phdr) for
 * the one whose segments hold this function; the first object listed is
 * the program itself.
 */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "pin.h"

struct self {
	uintptr_t addr;   /* an address of this copy's code */
	const char *name; /* its object's name, once found */
	int index;        /* its object's place in the list (0: the program) */
	int seen;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self *me = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && me->addr - start < ph->p_memsz) {
			me->name = info->dlpi_name;
			me->index = me->seen;
			return 1;
		}
	}
	me->seen++;
	return 0;
}

bool rl_pin_self(void)
{
	struct self me = { (uintptr_t)&rl_pin_self, NULL, -1, 0 };

	/* dlopen() below, not inside the walk (it holds the loader's lock). */
	if (!dl_iterate_phdr(find_self, &me))
		return false;
	if (me.index == 0)
		return true; /* the program itself: never unloaded */
#if defined(RTLD_NOLOAD) && defined(RTLD_NODELETE)
	/* Never closed: the object stays until the process exits. */
	return me.name && me.name[0] &&
	       dlopen(me.name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
#else
	return false;
#endif
}
