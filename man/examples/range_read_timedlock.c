/* Wait at most 20 ms for a range: the deadline is absolute, on the
 * clock named in the call (CLOCK_MONOTONIC: immune to clock changes).
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>

static DEFINE_RANGE_LOCK_TREE(tree);

/* now + ms on CLOCK_MONOTONIC, as the timed calls want it */
static struct timespec deadline_in(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int main(void)
{
	struct range_lock writer, reader;
	struct timespec ts;
	int r;

	range_lock_init(&writer, 0, 4095);
	range_write_lock(&tree, &writer);    /* [0, 4095] is written */

	range_lock_init(&reader, 1000, 1999);
	ts = deadline_in(20);
	r = range_read_timedlock(&tree, &reader, CLOCK_MONOTONIC, &ts);
	printf("while written: %s\n", r == -ETIMEDOUT ? "timed out" : "held");

	range_write_unlock(&tree, &writer);
	ts = deadline_in(20);
	r = range_read_timedlock(&tree, &reader, CLOCK_MONOTONIC, &ts);
	printf("after the unlock: %s\n", r == 0 ? "held" : "timed out");
	if (r == 0)
		range_read_unlock(&tree, &reader);
	return range_lock_tree_destroy(&tree);
}
