// SPDX-License-Identifier: MIT
//
// <rangelock/rangelock.hpp>: the standard lock types work with the wrappers,
// the holds move, the timed forms map onto the C deadlines, exclusion holds
// under threads, a range_set takes overlapping ranges of one thread (where
// std::lock livelocks), async_range completes once or is withdrawn, a tree
// splits into segments and counts statistics through the class, and misuse
// aborts.  Built by cxx.cmake with g++ and with
// clang++ at -std=c++17 -Wall -Wextra -Werror.  Threads record, the main
// thread checks after joining; alarm() is the watchdog.
#include <rangelock/rangelock.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace std::chrono_literals;
using rangelock::range;
using rangelock::range_set;
using rangelock::read_hold;
using rangelock::write_hold;

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			std::fprintf(stderr, "%s:%d: CHECK failed: %s\n",      \
				     __FILE__, __LINE__, #cond);               \
			failures++;                                            \
		}                                                              \
	} while (0)

// ---- the types' shape ----------------------------------------------------

static_assert(!std::is_copy_constructible_v<range> && !std::is_move_constructible_v<range>,
	      "a range is the request: its address is in the tree");
static_assert(!std::is_copy_constructible_v<write_hold> && !std::is_copy_assignable_v<write_hold>);
static_assert(!std::is_copy_constructible_v<read_hold> && !std::is_copy_assignable_v<read_hold>);
static_assert(std::is_nothrow_move_constructible_v<write_hold> &&
	      std::is_nothrow_move_assignable_v<write_hold>);
static_assert(std::is_nothrow_move_constructible_v<read_hold> &&
	      std::is_nothrow_move_assignable_v<read_hold>);
static_assert(!std::is_copy_constructible_v<range_set> && !std::is_move_constructible_v<range_set>);
static_assert(!std::is_copy_constructible_v<rangelock::async_range> &&
	      !std::is_move_constructible_v<rangelock::async_range>);
static_assert(noexcept(std::declval<range &>().lock()) &&
	      noexcept(std::declval<range &>().try_lock_for(std::declval<const std::chrono::milliseconds &>())) &&
	      noexcept(std::declval<range &>().lock_shared()));

// A clock the library does not know: steady_clock moved by an hour.
struct odd_clock {
	using duration = std::chrono::nanoseconds;
	using rep = duration::rep;
	using period = duration::period;
	using time_point = std::chrono::time_point<odd_clock>;
	static constexpr bool is_steady = true;
	static time_point now() noexcept
	{
		return time_point(std::chrono::steady_clock::now().time_since_epoch() + 1h);
	}
};

// Is [s, l] of @t free for writing?  (Asked from another thread, so the
// answer is not about the caller's own holds.)
static bool write_free(rangelock::tree &t, uint64_t s, uint64_t l)
{
	bool got = false;
	std::thread th([&] {
		range r(t, s, l);
		got = r.try_lock();
		if (got)
			r.unlock();
	});
	th.join();
	return got;
}

static bool read_free(rangelock::tree &t, uint64_t s, uint64_t l)
{
	bool got = false;
	std::thread th([&] {
		range r(t, s, l);
		got = r.try_lock_shared();
		if (got)
			r.unlock_shared();
	});
	th.join();
	return got;
}

// ---- tree::defer_writers() --------------------------------------------

// The flag on the C tree, with and without segments; locks still work.
static void test_defer_writers()
{
	rangelock::tree t;

	CHECK(t.defer_writers() == 0);
	CHECK((t.native_handle()->flags & RANGE_LOCK_TREE_FLAG_DEFER_WRITERS) != 0);
	CHECK(t.set_segments(4, 18) == 0);         // kept by a split
	CHECK((t.native_handle()->flags & RANGE_LOCK_TREE_FLAG_DEFER_WRITERS) != 0);
	{
		range a(t, 0, 4095);
		std::unique_lock<range> la(a);
		CHECK(!write_free(t, 4000, 4100));
		CHECK(write_free(t, 262144, 262200));
	}
	CHECK(t.defer_writers(false) == 0);
	CHECK((t.native_handle()->flags & RANGE_LOCK_TREE_FLAG_DEFER_WRITERS) == 0);
}

// ---- tree::set_segments(), tree's statistics -------------------------------

// A 1 MiB buffer, 4 segments by stripes of 256 KiB: exclusion within a
// stripe and across a stripe border, the C call's answers, a merge back.
static void test_set_segments()
{
	rangelock::tree t;

	CHECK(t.set_segments(3, 18) == -EINVAL);   // not a power of two
	CHECK(t.set_segments(0, 18) == -EINVAL);
	CHECK(t.set_segments(512, 18) == -EINVAL); // more than 256
	CHECK(t.set_segments(4, 64) == -EINVAL);   // stripe shift above 63
	CHECK(t.set_segments(4, 18) == 0);
	{
		range a(t, 0, 4095), b(t, 262144, 262144 + 4095);
		std::unique_lock<range> la(a);
		std::unique_lock<range> lb(b);
		CHECK(!write_free(t, 4000, 4100));     // meets a, in segment 0
		CHECK(write_free(t, 4096, 8191));      // segment 0, free
		CHECK(write_free(t, 524288, 528383));  // segment 2
		CHECK(!write_free(t, 262000, 262200)); // spans 0 and 1, meets b
		CHECK(read_free(t, 262143, 262143));   // last unit of stripe 0
		CHECK(t.set_segments(8, 16) == -EBUSY);
		CHECK(t.set_segments(1, 0) == -EBUSY);
	}
	CHECK(t.set_segments(8, 16) == 0);         // re-segment an empty tree
	{
		range whole(t);                        // meets all 8 segments
		std::shared_lock<range> l(whole);
		CHECK(!write_free(t, 900000, 900000));
		CHECK(read_free(t, 0, RANGE_LOCK_FULL));
	}
	CHECK(t.set_segments(1, 0) == 0);          // back to one tree
	CHECK(t.set_segments(4, 18) == 0);         // ~tree frees the segments
}

static void test_stats()
{
	range_lock_stats st{};

	{
		rangelock::tree t;

		CHECK(t.get_stats(st) == -ENODATA);
		CHECK(t.enable_stats() == 0);
		CHECK(t.enable_stats() == 0);           // the same storage again
		range_lock_stats other{};
		CHECK(t.enable_stats(other) == -EBUSY); // the tree's own is in use
		CHECK(t.set_segments(4, 18) == -ENOTSUP);
		range r(t, 10, 19);
		for (int i = 0; i < 3; i++) {
			r.lock();
			r.unlock();
		}
		r.lock_shared();
		CHECK(t.get_stats(st) == 0);
		CHECK(st.write_acquired == 3 && st.read_acquired == 1 && st.held_now == 1);
		t.reset_stats();
		CHECK(t.get_stats(st) == 0);
		CHECK(st.write_acquired == 0 && st.read_acquired == 0 && st.held_now == 1);
		CHECK(!write_free(t, 15, 15));
		CHECK(t.get_stats(st) == 0);
		CHECK(st.trylock_failed == 1);
		r.unlock_shared();
	}
	{
		// Segments first, then statistics in the caller's storage: a
		// request that spans segments counts once.
		range_lock_stats mine{};
		rangelock::tree t;

		CHECK(t.set_segments(4, 18) == 0);
		CHECK(t.enable_stats(mine) == 0);
		CHECK(t.enable_stats() == -EBUSY);      // the caller's is in use
		range span(t, 262000, 262200), one(t, 0, 99);
		span.lock();
		one.lock_shared();
		CHECK(t.get_stats(st) == 0);
		CHECK(st.write_acquired == 1 && st.read_acquired == 1 && st.held_now == 2);
		one.unlock_shared();
		span.unlock();
		CHECK(t.get_stats(st) == 0 && st.held_now == 0);
		// ... and the segment statistics see which one spanned.
		range_lock_segment_stats ss{};
		CHECK(t.get_segment_stats(ss) == 0);
		CHECK(ss.one_segment == 1 && ss.spanning == 1 && ss.spanning_parts == 2 &&
		      ss.whole_tree == 0);
	}
	{
		rangelock::tree t;
		range_lock_segment_stats ss{};

		CHECK(t.set_segments(4, 18) == 0);
		CHECK(t.get_segment_stats(ss) == -ENODATA); // statistics not enabled
	}
}

// ---- std::unique_lock, std::shared_lock, std::scoped_lock, std::lock ------

static void test_standard_locks()
{
	rangelock::tree t;
	{
		range w(t, 0, 9);
		std::unique_lock<range> lk(w);
		CHECK(lk.owns_lock());
		CHECK(!read_free(t, 9, 20));
		CHECK(!write_free(t, 5, 5));
		CHECK(write_free(t, 10, 20));
		lk.unlock();
		CHECK(write_free(t, 0, 9));
		CHECK(lk.try_lock_for(10ms));
	}
	CHECK(write_free(t, 0, 9));
	{
		range r1(t, 0, 9), r2(t, 5, 14);
		std::shared_lock<range> a(r1), b(r2); // readers share
		CHECK(a.owns_lock() && b.owns_lock());
		CHECK(read_free(t, 0, 14));
		CHECK(!write_free(t, 14, 14));
	}
	{
		rangelock::tree t2(rangelock::fifo);
		range a(t, 0, 9), b(t2, 0, 9), c(t, 100, 109);
		std::scoped_lock lk(a, b, c);
		CHECK(!write_free(t, 0, 0) && !write_free(t2, 9, 9) && !write_free(t, 100, 100));
		CHECK(write_free(t, 10, 99));
	}
	CHECK(write_free(t, 0, RANGE_LOCK_FULL));
	{
		range full(t);
		std::unique_lock<range> lk(full, std::try_to_lock);
		CHECK(lk.owns_lock());
		CHECK(!read_free(t, RANGE_LOCK_FULL, RANGE_LOCK_FULL));
	}
}

// Two threads take the same two write ranges in opposite orders through
// std::lock: its lock/try_lock/back-off must never deadlock.
static void test_std_lock_opposite_orders()
{
	rangelock::tree t1, t2;
	std::atomic<long> in{0}, done{0};
	bool overlap = false;
	auto body = [&](bool flip) {
		for (int i = 0; i < 2000; i++) {
			range a(t1, 0, 9), b(t2, 0, 9);
			if (flip)
				std::lock(b, a);
			else
				std::lock(a, b);
			if (in.fetch_add(1) != 0)
				overlap = true;
			in.fetch_sub(1);
			a.unlock();
			b.unlock();
		}
		done.fetch_add(1);
	};
	std::thread x(body, false), y(body, true);
	x.join();
	y.join();
	CHECK(done.load() == 2);
	CHECK(!overlap);
}

// ---- the holds --------------------------------------------------------------

static write_hold lock_and_return(range &r)
{
	write_hold h(r);
	return h; // moves
}

static void test_holds_move()
{
	rangelock::tree t;
	range r(t, 0, 9);
	{
		write_hold h = lock_and_return(r);
		CHECK(h.owns_lock() && h.get_range() == &r);
		CHECK(!write_free(t, 0, 0));
		write_hold g(std::move(h));
		CHECK(!h.owns_lock() && h.get_range() == nullptr);
		CHECK(g.owns_lock());
		std::vector<write_hold> v;
		v.push_back(std::move(g));
		CHECK(!write_free(t, 9, 9));
		v.clear(); // the destructor unlocks
		CHECK(write_free(t, 0, 9));
	}
	{
		range r2(t, 5, 14);
		write_hold a(r), b(r2, std::defer_lock);
		CHECK(a && !b);
		CHECK(!b.try_lock_for(5ms)); // [5, 9] is a's: timed out
		b = std::move(a);            // b had nothing; now owns r
		CHECK(b.owns_lock() && b.get_range() == &r);
		CHECK(!write_free(t, 0, 0));
		b.unlock();
		CHECK(write_free(t, 0, 14));
		read_hold s(r), u(r2); // two read holds share
		CHECK(s && u);
		swap(s, u);
		CHECK(s.get_range() == &r2 && u.get_range() == &r);
		CHECK(!write_free(t, 14, 14) && read_free(t, 0, 14));
	}
	CHECK(write_free(t, 0, 14));
	// Lockable holds: std::scoped_lock and std::unique_lock over them.
	{
		range r2(t, 20, 29);
		write_hold a(r, std::defer_lock);
		read_hold b(r2, std::defer_lock);
		{
			std::scoped_lock lk(a, b);
			CHECK(a.owns_lock() && b.owns_lock());
			CHECK(!write_free(t, 0, 0) && read_free(t, 20, 29) && !write_free(t, 29, 29));
		}
		CHECK(!a.owns_lock() && !b.owns_lock());
		std::unique_lock<read_hold> lk(b, 10ms); // TimedLockable
		CHECK(lk.owns_lock() && b.owns_lock());
	}
	CHECK(write_free(t, 0, 29));
}

static void test_downgrade()
{
	rangelock::tree t;
	range r(t, 0, 9);
	write_hold w(r);
	CHECK(!read_free(t, 5, 5));
	read_hold rd = w.downgrade();
	CHECK(!w.owns_lock() && w.get_range() == nullptr);
	CHECK(rd.owns_lock() && rd.get_range() == &r);
	CHECK(read_free(t, 5, 5));   // readers get in now
	CHECK(!write_free(t, 5, 5)); // writers do not
	rd.unlock();
	CHECK(write_free(t, 0, 9));
}

// grow() and shrink() keep the hold; try_grow() fails on a conflict in the
// added units only.
static void test_grow_shrink()
{
	rangelock::tree t;
	range r(t, 10, 19);
	write_hold w(r);
	r.shrink(12, 15);
	CHECK(r.start() == 12 && r.last() == 15);
	CHECK(write_free(t, 10, 11) && write_free(t, 16, 19));
	CHECK(!write_free(t, 12, 15));
	range other(t, 20, 20);
	other.lock();
	CHECK(!r.try_grow(10, 20)); // [20, 20] is held by another request
	CHECK(r.start() == 12 && r.last() == 15);
	r.grow(10, 19);
	CHECK(r.start() == 10 && r.last() == 19);
	CHECK(!write_free(t, 10, 11) && write_free(t, 21, 30));
	other.unlock();
	CHECK(r.try_grow(0, 20));
	CHECK(!write_free(t, 20, 20));
	w.unlock();
	CHECK(write_free(t, 0, 20));
}

// ---- timed forms ------------------------------------------------------------

static void test_timed()
{
	using namespace std::chrono;
	rangelock::tree t;
	range held(t, 0, 9), r(t, 5, 5);

	CHECK(r.try_lock_until(steady_clock::now() - 1h)); // free: taken anyway
	r.unlock();
	CHECK(r.try_lock_shared_until(system_clock::time_point(-2s))); // before the epoch
	r.unlock_shared();
	held.lock();
	const auto t0 = steady_clock::now();
	CHECK(!r.try_lock_for(30ms));
	CHECK(steady_clock::now() - t0 >= 30ms);
	CHECK(!r.try_lock_shared_until(system_clock::now() + 20ms));
	CHECK(!r.try_lock_until(odd_clock::now() + 20ms));
	// Deadlines that passed, before the epoch, at the far ends: no -EINVAL,
	// no overflow.
	CHECK(!r.try_lock_until(system_clock::time_point(-2s)));
	CHECK(!r.try_lock_shared_until(steady_clock::time_point::min()));
	CHECK(!r.try_lock_for(-1s));
	CHECK(!r.try_lock_until(time_point<system_clock, hours>(hours(-1))));
	CHECK(steady_clock::now() - t0 < 5s);
	// Granted while waiting on a far deadline.
	std::atomic<bool> got{false};
	std::thread th([&] {
		range q(t, 0, 0);
		got = q.try_lock_until(steady_clock::time_point::max());
		if (got)
			q.unlock();
	});
	std::this_thread::sleep_for(20ms);
	held.unlock();
	th.join();
	CHECK(got);
}

// ---- exclusion under threads ------------------------------------------------

static void test_exclusion_stress()
{
	constexpr int units = 32, threads = 4, iters = 20000;
	static std::atomic<int> writers[units], readers[units];
	rangelock::tree t;
	std::atomic<long> violations{0};
	std::vector<std::thread> ths;

	for (int i = 0; i < threads; i++) {
		ths.emplace_back([&, i] {
			std::minstd_rand rnd(1234 + i);
			for (int k = 0; k < iters; k++) {
				uint64_t s = rnd() % units, l = s + rnd() % 4;
				if (l >= units)
					l = units - 1;
				range r(t, s, l);
				if (rnd() % 3 == 0) {
					std::unique_lock<range> lk(r);
					for (uint64_t u = s; u <= l; u++)
						if (writers[u].fetch_add(1) || readers[u].load())
							violations++;
					for (uint64_t u = s; u <= l; u++)
						writers[u].fetch_sub(1);
				} else {
					std::shared_lock<range> lk(r);
					for (uint64_t u = s; u <= l; u++) {
						readers[u].fetch_add(1);
						if (writers[u].load())
							violations++;
					}
					for (uint64_t u = s; u <= l; u++)
						readers[u].fetch_sub(1);
				}
			}
		});
	}
	for (auto &th : ths)
		th.join();
	CHECK(violations.load() == 0);
}

// ---- range_set: several ranges as one arrival -------------------------------

constexpr auto R = rangelock::access::read;
constexpr auto W = rangelock::access::write;

// Run @fn in a child process under alarm(@secs): true when it returned in
// time with no failed check.  A livelocked thread cannot be joined; a child
// can be killed.
static bool finishes_within(void (*fn)(), unsigned secs)
{
	int status = 0;

	std::fflush(nullptr);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(secs);
		failures = 0;
		fn();
		_exit(failures ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// What the header documents: std::lock over two conflicting ranges of one
// thread never returns.
static void std_lock_overlapping()
{
	rangelock::tree t;
	range a(t, 0, 99), b(t, 50, 199);
	std::lock(a, b);
	a.unlock();
	b.unlock();
}

// The same two ranges as one set: taken at once, in every form.
static void set_overlapping()
{
	rangelock::tree t;
	range_set s(t, {{0, 99, W}, {50, 199, W}});
	CHECK(s.size() == 2);
	{
		std::scoped_lock lk(s);
		CHECK(!write_free(t, 0, 0) && !read_free(t, 75, 75) && !read_free(t, 199, 199));
		CHECK(write_free(t, 200, 300));
	}
	CHECK(write_free(t, 0, 199));
	CHECK(s.try_lock());
	CHECK(!read_free(t, 60, 60));
	s.unlock();
	CHECK(s.try_lock_for(10ms));
	s.unlock();
	CHECK(s.try_lock_until(odd_clock::now() + 10ms));
	s.unlock();
	CHECK(s.try_lock_until(std::chrono::system_clock::now() - 1h)); // free: taken anyway
	s.unlock();
	CHECK(write_free(t, 0, 199));

	// A reader and a writer of one set, and members added one by one.
	range_set m(t);
	m.add(50, 199, W);
	m.add(0, 99, R);
	m.add(300, 300, R);
	std::unique_lock<range_set> lk(m);
	CHECK(read_free(t, 0, 49) && !write_free(t, 0, 0));
	CHECK(!read_free(t, 50, 50) && !read_free(t, 199, 199));
	CHECK(read_free(t, 300, 300) && !write_free(t, 300, 300));
	lk.unlock();
	CHECK(write_free(t, 0, 300));
	// An empty set locks nothing.
	range_set e(t);
	e.lock();
	e.unlock();
}

static void test_set_overlapping_one_thread()
{
	CHECK(!finishes_within(std_lock_overlapping, 1)); // the documented livelock
	CHECK(finishes_within(set_overlapping, 20));
}

// Against a holder on another thread: try_lock and try_lock_for take all or
// nothing, and leave nothing in the tree when they fail; lock() waits.
static void test_set_all_or_nothing()
{
	rangelock::tree t;
	std::atomic<int> phase{0};
	std::atomic<bool> released{false};
	std::thread holder([&] {
		range h(t, 150, 150);
		h.lock();
		phase = 1;
		while (phase.load() != 2)
			std::this_thread::sleep_for(1ms);
		std::this_thread::sleep_for(20ms);
		released = true;
		h.unlock();
	});
	while (phase.load() != 1)
		std::this_thread::sleep_for(1ms);
	range_set s(t, {{0, 99, W}, {50, 199, W}});
	const bool got_try = s.try_lock();
	const bool left_try = !write_free(t, 0, 149) || !write_free(t, 151, 199);
	const bool got_timed = s.try_lock_for(20ms);
	const bool left_timed = !write_free(t, 0, 149) || !write_free(t, 151, 199);
	phase = 2;
	s.lock();
	const bool waited = released.load();
	holder.join();
	CHECK(!got_try && !left_try);
	CHECK(!got_timed && !left_timed);
	CHECK(waited);
	CHECK(!write_free(t, 150, 150) && !write_free(t, 0, 0));
	s.unlock();
	CHECK(write_free(t, 0, 199));
}

// Sets of overlapping members and single ranges, from several threads:
// each unit is written by one thread at a time, and never read meanwhile.
static void test_set_exclusion_stress()
{
	constexpr int units = 32, threads = 3, iters = 5000;
	static std::atomic<int> writers[units], readers[units];
	rangelock::tree t;
	std::atomic<long> violations{0}, taken{0};
	std::vector<std::thread> ths;

	for (int i = 0; i < threads; i++) {
		ths.emplace_back([&, i] {
			std::minstd_rand rnd(99 + i);
			for (int k = 0; k < iters; k++) {
				int mode[units] = {}; // 0 none, 1 read, 2 write
				range_set s(t);
				const int n = 1 + rnd() % 3;
				for (int j = 0; j < n; j++) {
					uint64_t st = rnd() % units, l = st + rnd() % 6;
					const bool w = rnd() % 3 == 0;
					if (l >= units)
						l = units - 1;
					s.add(st, l, w ? W : R);
					for (uint64_t u = st; u <= l; u++)
						mode[u] = std::max(mode[u], w ? 2 : 1);
				}
				const int how = rnd() % 4;
				if (how == 0) {
					if (!s.try_lock())
						continue;
				} else if (how == 1) {
					if (!s.try_lock_for(1ms))
						continue;
				} else {
					s.lock();
				}
				taken++;
				for (int u = 0; u < units; u++) {
					if (mode[u] == 2 && (writers[u].fetch_add(1) || readers[u].load()))
						violations++;
					if (mode[u] == 1) {
						readers[u].fetch_add(1);
						if (writers[u].load())
							violations++;
					}
				}
				std::this_thread::yield(); // let the others in, if they can
				for (int u = 0; u < units; u++) {
					if (mode[u] == 2)
						writers[u].fetch_sub(1);
					if (mode[u] == 1)
						readers[u].fetch_sub(1);
				}
				s.unlock();
			}
		});
	}
	for (auto &th : ths)
		th.join();
	CHECK(violations.load() == 0);
	CHECK(taken.load() > threads * iters / 2);
}

// ---- async_range ------------------------------------------------------------

struct counted : rangelock::async_range {
	using async_range::async_range;
	std::atomic<int> calls{0}, status{1};
	std::atomic<bool> held_then{false};
	void completed(int st) noexcept override
	{
		status = st;
		held_then = owns_lock();
		calls++;
	}
};

// Granted by a release: the completion runs once, on the releasing thread,
// before the release returns; held at submission: no completion.
static void test_async_grant()
{
	rangelock::tree t;
	range holder(t, 0, 9);
	counted a(t, 5, 15);

	holder.lock();
	CHECK(a.lock_async() == -EINPROGRESS);
	CHECK(a.calls == 0 && !a.owns_lock());
	holder.unlock();
	CHECK(a.calls == 1 && a.status == 0 && a.held_then && a.owns_lock());
	CHECK(!write_free(t, 15, 15) && !read_free(t, 5, 5) && write_free(t, 0, 4));
	CHECK(a.cancel() == -EALREADY);
	a.unlock();
	CHECK(!a.owns_lock() && write_free(t, 0, 15));

	CHECK(a.lock_shared_async() == 0 && a.owns_lock()); // free: held now
	CHECK(read_free(t, 5, 15) && !write_free(t, 5, 5));
	a.unlock(); // by its mode: read
	CHECK(write_free(t, 0, 15));

	holder.lock();
	CHECK(a.lock_shared_async() == -EINPROGRESS);
	std::thread th([&] { holder.unlock(); }); // granted on that thread
	th.join();
	CHECK(a.status == 0 && a.owns_lock());
	CHECK(read_free(t, 5, 5) && !write_free(t, 15, 15));
	a.unlock();
	CHECK(a.calls == 2);
	CHECK(write_free(t, 0, 15));
}

// cancel() withdraws a queued request: no completion, nothing left, and the
// object can be submitted again.
static void test_async_cancel()
{
	rangelock::tree t;
	range holder(t, 0, 9);
	counted a(t, 5, 15);

	holder.lock();
	CHECK(a.lock_async() == -EINPROGRESS);
	CHECK(a.cancel() == 0 && !a.owns_lock());
	holder.unlock();
	CHECK(a.calls == 0);
	CHECK(write_free(t, 0, 15));
	holder.lock();
	CHECK(a.lock_async() == -EINPROGRESS);
	holder.unlock();
	CHECK(a.calls == 1 && a.owns_lock());
	a.unlock();
	CHECK(write_free(t, 0, 15));
}

// A completion may unlock and destroy its request.
struct self_deleting : rangelock::async_range {
	self_deleting(rangelock::tree &t, std::atomic<int> &n) : async_range(t, 0, 0), n_(n) {}
	std::atomic<int> &n_;
	void completed(int st) noexcept override
	{
		if (st == 0)
			unlock();
		n_++;
		delete this;
	}
};

static void test_async_delete_in_completion()
{
	rangelock::tree t;
	range holder(t, 0, 9);
	std::atomic<int> n{0};

	holder.lock();
	for (int i = 0; i < 3; i++)
		CHECK((new self_deleting(t, n))->lock_async() == -EINPROGRESS);
	holder.unlock();
	CHECK(n == 3);
	CHECK(write_free(t, 0, 9));
}

// ---- misuse aborts, with a message ------------------------------------------

static bool aborts_with(void (*fn)(), const char *needle)
{
	int fds[2];
	char out[1024] = {0};
	int status = 0;
	ssize_t n, got = 0;

	if (pipe(fds) != 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		alarm(10);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (!std::strstr(out, needle))
		std::fprintf(stderr, "stderr was '%s', wanted '%s'\n", out, needle);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && std::strstr(out, needle);
}

static void destroy_held_range()
{
	static rangelock::tree t;
	range r(t, 3, 7);
	r.lock();
}

static void unlock_wrong_mode()
{
	static rangelock::tree t;
	range r(t, 3, 7);
	r.lock_shared();
	r.unlock();
}

static void hold_locked_twice()
{
	static rangelock::tree t;
	range r(t, 3, 7);
	write_hold h(r);
	h.lock();
}

static void range_backwards()
{
	static rangelock::tree t;
	range r(t, 7, 3);
}

static void destroy_queued_async()
{
	static rangelock::tree t;
	static range h(t, 0, 9);
	h.lock();
	counted a(t, 3, 7);
	(void)a.lock_async();
}

static void destroy_held_set()
{
	static rangelock::tree t;
	range_set s(t, {{0, 9, W}});
	s.lock();
}

static void unlock_set_not_held()
{
	static rangelock::tree t;
	range_set s(t);
	s.unlock();
}

static void add_to_held_set()
{
	static rangelock::tree t;
	range_set s(t, {{0, 9, W}});
	s.lock();
	s.add(20, 29, R);
}

static void test_misuse()
{
	CHECK(aborts_with(destroy_held_range, "rangelock::range::~range: range destroyed while held"));
	CHECK(aborts_with(unlock_wrong_mode, "range_write_unlock([3, 7]): range is held for reading"));
	CHECK(aborts_with(hold_locked_twice, "rangelock::write_hold::lock: hold already owns its range"));
	CHECK(aborts_with(range_backwards, "rangelock::range: start > last"));
	CHECK(aborts_with(destroy_queued_async,
			  "rangelock::async_range::~async_range: request destroyed while queued or held"));
	CHECK(aborts_with(destroy_held_set, "rangelock::range_set::~range_set: set destroyed while held"));
	CHECK(aborts_with(unlock_set_not_held, "rangelock::range_set::unlock: set not held"));
	CHECK(aborts_with(add_to_held_set, "rangelock::range_set::add: set is held"));
}

int main()
{
	alarm(120);
	test_standard_locks();
	test_std_lock_opposite_orders();
	test_holds_move();
	test_downgrade();
	test_grow_shrink();
	test_timed();
	test_exclusion_stress();
	test_set_overlapping_one_thread();
	test_set_all_or_nothing();
	test_set_exclusion_stress();
	test_async_grant();
	test_async_cancel();
	test_async_delete_in_completion();
	test_set_segments();
	test_defer_writers();
	test_stats();
	test_misuse();
	if (failures) {
		std::fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	std::printf("rangelock.hpp: all checks passed\n");
	return 0;
}
