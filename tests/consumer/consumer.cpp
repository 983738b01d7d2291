// A C++ program that uses librangelock through <rangelock/rangelock.hpp>.
#include <rangelock/rangelock.hpp>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>

int main()
{
	rangelock::tree tree;
	rangelock::range a(tree, 0, 99), b(tree, 100, 199), c(tree, 50, 149);
	{
		std::scoped_lock both(a, b);
		if (c.try_lock_shared())
			return 1;
	}
	{
		std::shared_lock<rangelock::range> ra(a);
		rangelock::read_hold rc(c);
		if (!rc.owns_lock())
			return 2;
	}
	if (std::strcmp(rangelock_version(), RANGELOCK_VERSION_STRING) != 0)
		return 3;
	std::printf("C++ consumer ok: librangelock %s\n", rangelock_version());
	return 0;
}
