/* An event loop's request: queued while a writer holds the range, granted
 * by the writer's unlock, whose thread runs the completion; the completion
 * only tells the loop (an eventfd).
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <errno.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

static DEFINE_RANGE_LOCK_TREE(tree);

static void granted(struct range_lock_async *req, int status)
{
	uint64_t one = 1;

	if (status == 0 && write(*(int *)req->arg, &one, sizeof(one)) < 0)
		perror("write");
}

int main(void)
{
	int efd = eventfd(0, EFD_CLOEXEC);
	DEFINE_RANGE_LOCK(w, 0, 99);
	struct range_lock_async req;
	uint64_t n;

	if (efd < 0 || range_lock_async_init(&req, 50, 59, granted, &efd) != 0)
		return 1;
	range_write_lock(&tree, &w);
	if (range_read_lock_async(&tree, &req) != -EINPROGRESS)
		return 1;                       /* 0 would mean: held now */
	range_write_unlock(&tree, &w);          /* grants req: granted() runs */

	/* the loop: epoll_wait() says efd is readable */
	if (read(efd, &n, sizeof(n)) != sizeof(n))
		return 1;
	printf("reading [%llu, %llu]\n", (unsigned long long)req.lock.start,
	       (unsigned long long)req.lock.last);
	range_read_unlock(&tree, &req.lock);
	close(efd);
	return range_lock_tree_destroy(&tree);
}
