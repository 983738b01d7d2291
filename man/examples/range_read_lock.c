/* Readers of a range share it; a writer waits for the readers and
 * writers of the bytes it writes, and for nothing else.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <stdio.h>
#include <string.h>

static DEFINE_RANGE_LOCK_TREE(tree);
static char file[4096];

static void write_at(uint64_t off, const char *s)
{
	struct range_lock w;

	range_lock_init(&w, off, off + strlen(s) - 1);
	range_write_lock(&tree, &w);
	memcpy(file + off, s, strlen(s));
	range_write_unlock(&tree, &w);
}

static void read_at(uint64_t off, size_t len, char *out)
{
	struct range_lock r;

	range_lock_init(&r, off, off + len - 1);
	range_read_lock(&tree, &r);
	memcpy(out, file + off, len);
	range_read_unlock(&tree, &r);
}

int main(void)
{
	char out[6] = "";

	write_at(100, "hello");
	read_at(100, 5, out);
	printf("%s\n", out);
	return range_lock_tree_destroy(&tree);
}
