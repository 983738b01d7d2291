// SPDX-License-Identifier: MIT
//
// librangelock for C++17: header-only wrappers over <rangelock/rangelock.h>.
//
//   rangelock::tree         the lock of one resource (owns a range_lock_tree;
//                           set_segments(), statistics)
//   rangelock::range        one request for [start, last] of a tree; shaped
//                           like std::shared_timed_mutex, so std::unique_lock
//                           (write), std::shared_lock (read), std::scoped_lock
//                           and std::lock work with it
//   rangelock::write_hold   movable RAII write hold on a range (as
//                           std::unique_lock), with downgrade() to a read_hold
//   rangelock::read_hold    movable RAII read hold on a range (as
//                           std::shared_lock)
//   rangelock::range_set    several ranges of one tree taken as ONE arrival
//                           (range_lock_many()): all or nothing, and its
//                           members never conflict with each other
//   rangelock::async_range  an asynchronous request for event loops
//                           (range_*_lock_async()): override completed()
//
//     rangelock::tree file_lock;
//     void write_extent(uint64_t off, uint64_t len) {
//         rangelock::range r(file_lock, off, off + len - 1);
//         std::unique_lock hold(r);          // or rangelock::write_hold
//         ...
//     }
//
// A range IS the request of the C API (struct range_lock): its address is in
// the tree while it is held, so a range can be neither copied nor moved, and
// one range is used by one thread at a time (make one per thread and call,
// usually on the stack, as in C).  The holds refer to a range, as
// std::unique_lock refers to its mutex, so they move freely; the range must
// outlive them.
//
// Requirements met: range is Lockable and TimedLockable for writing
// (lock, try_lock, try_lock_for, try_lock_until, unlock) and SharedLockable
// and SharedTimedLockable for reading (the same with _shared).  write_hold
// and read_hold are Lockable and TimedLockable in their own mode, as
// std::unique_lock and std::shared_lock are; so is range_set, each member
// in its own mode.
//
// std::lock and std::scoped_lock over several ranges (libstdc++, libc++)
// lock one, try the others, and on a failure release all and retry in
// another order.  That is right for ranges that do not conflict with each
// other: on different trees, disjoint, or all read.  Ranges of one thread
// that do conflict with each other (they intersect in one tree and one of
// them writes) are never all taken: each try fails on the thread's own
// other range (as trylock does in C), and std::lock retries for ever at
// full CPU -- a livelock, which the checking mode (RANGELOCK_CHECKS) does
// not report: a failed trylock is a valid answer.  Locking them one after
// the other deadlocks instead (that the checking mode reports).  Take such
// ranges as one rangelock::range_set: its members, [0, 99] and [50, 199]
// for writing say, both hold their units.
//
// Timed calls: a steady_clock deadline is a CLOCK_MONOTONIC one and a
// system_clock deadline a CLOCK_REALTIME one (range_*_timedlock()); any
// other clock is waited for on steady_clock and checked on its own clock
// afterwards, as the standard's timed mutexes do.  A free range is taken
// even when the deadline has passed.
//
// No exceptions: every call is noexcept.  Misuse that the C calls abort on
// (unlocking a range not held, the wrong mode, locking a range twice) aborts
// here too, with the C library's message; so do misuses the C++ layer sees
// (a start after last, destroying a held range or set, a queued or held
// asynchronous request or a busy tree, locking through a hold without a
// range or that already owns it).  The semantics
// are the C calls': no stealing in a FIFO tree, self-deadlock and recursive
// reads as described in <rangelock/rangelock.h>.
#ifndef RANGELOCK_RANGELOCK_HPP
#define RANGELOCK_RANGELOCK_HPP

#include <rangelock/rangelock.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

namespace rangelock {

namespace detail {

[[noreturn]] inline void die(const char *call, const char *why) noexcept
{
	std::fprintf(stderr, "librangelock: %s: %s\n", call, why);
	std::fflush(stderr);
	std::abort();
}

// A duration since a clock's epoch as a timespec: tv_nsec in [0, 1e9) also
// before the epoch (a negative tv_sec is a deadline that has passed), and
// far deadlines clamped instead of overflowing.
template <class Rep, class Period>
inline timespec to_timespec(const std::chrono::duration<Rep, Period> &d) noexcept
{
	using namespace std::chrono;
	constexpr double limit = 1e15; // seconds; ~31 million years
	const double s = duration<double>(d).count();
	timespec ts{};

	if (!(s < limit) || !(s > -limit)) {
		ts.tv_sec = s > 0 ? std::numeric_limits<time_t>::max()
				  : std::numeric_limits<time_t>::min();
		return ts;
	}
	const seconds sec = floor<seconds>(d);
	const long long ns = duration_cast<nanoseconds>(d - sec).count();
	if (sec.count() > static_cast<long long>(std::numeric_limits<time_t>::max())) {
		ts.tv_sec = std::numeric_limits<time_t>::max();
		return ts;
	}
	if (sec.count() < static_cast<long long>(std::numeric_limits<time_t>::min())) {
		ts.tv_sec = std::numeric_limits<time_t>::min();
		return ts;
	}
	ts.tv_sec = static_cast<time_t>(sec.count());
	ts.tv_nsec = static_cast<long>(ns);
	return ts;
}

// A relative timeout clamped to ~31 years, so now() + it cannot overflow.
template <class Rep, class Period>
inline std::chrono::steady_clock::time_point
deadline_after(const std::chrono::duration<Rep, Period> &rel) noexcept
{
	using namespace std::chrono;
	constexpr double cap = 1e9; // seconds
	const auto now = steady_clock::now();

	if (!(duration<double>(rel).count() < cap))
		return now + duration_cast<steady_clock::duration>(seconds(1000000000));
	return now + ceil<steady_clock::duration>(rel);
}

// Wait for @t through @call(clockid, abstime), which returns true once it
// got what it waited for: a steady_clock deadline is a CLOCK_MONOTONIC one,
// a system_clock deadline a CLOCK_REALTIME one; another clock is waited for
// on steady_clock and checked on its own clock afterwards.
template <class Clock, class Duration, class Call>
inline bool wait_until(const std::chrono::time_point<Clock, Duration> &t, Call call) noexcept
{
	using namespace std::chrono;
	if constexpr (std::is_same_v<Clock, steady_clock>) {
		return call(CLOCK_MONOTONIC, to_timespec(t.time_since_epoch()));
	} else if constexpr (std::is_same_v<Clock, system_clock>) {
		return call(CLOCK_REALTIME, to_timespec(t.time_since_epoch()));
	} else {
		// Another clock: wait on steady_clock, believe only @Clock.
		for (;;) {
			const auto left = t - Clock::now();
			const auto until = steady_clock::now() +
				ceil<steady_clock::duration>(
					left > decltype(left)::zero()
						? left : decltype(left)::zero());
			if (call(CLOCK_MONOTONIC, to_timespec(until.time_since_epoch())))
				return true;
			if (Clock::now() >= t)
				return false;
		}
	}
}

} // namespace detail

/// The lock of one resource: an initialised struct range_lock_tree.
class tree {
public:
	/// Tag: a strict-FIFO tree (range_lock_tree_set_fifo()).
	struct fifo_t {
		explicit fifo_t() = default;
	};

	tree() noexcept { range_lock_tree_init(&t_); }
	explicit tree(fifo_t) noexcept
	{
		range_lock_tree_init(&t_);
		(void)range_lock_tree_set_fifo(&t_, 1); // empty: cannot fail
	}
	/// Aborts if a range is still held or waiting (range_lock_tree_destroy()).
	~tree()
	{
		if (range_lock_tree_destroy(&t_) != 0)
			detail::die("rangelock::tree::~tree",
				    "tree destroyed while a range is held or waiting");
	}
	tree(const tree &) = delete;
	tree &operator=(const tree &) = delete;

	/// Split the key space into @segments segments by stripes of
	/// 2^@stripe_shift units (range_lock_tree_set_segments(), which says
	/// how to choose them and what a split keeps).  Configuration, not a
	/// lock operation: call it while no thread uses the tree.  Return: 0;
	/// -EINVAL for a bad @segments (a power of two from 1 to 256) or
	/// @stripe_shift (above 63); -EBUSY if a range is held or waiting;
	/// -ENOTSUP with statistics enabled (enable them after the split);
	/// -ENOMEM.  The destructor frees the segments.
	int set_segments(unsigned segments, unsigned stripe_shift) noexcept
	{
		return range_lock_tree_set_segments(&t_, segments, stripe_shift);
	}

	/// Writers defer to the tree's sleeping readers, for at most about
	/// 2 ms per call (range_lock_tree_defer_writers(), which says
	/// what it costs); at any time.  Return: 0.
	int defer_writers(bool on = true) noexcept
	{
		return range_lock_tree_defer_writers(&t_, on ? 1 : 0);
	}

	/// Start counting statistics (range_lock_tree_enable_stats()) in
	/// storage that this object owns and frees.  Return: 0 (also when
	/// they are already counted there); -EBUSY if enabled with a caller's
	/// storage; -ENOMEM.
	int enable_stats() noexcept
	{
		if (!stats_) {
			stats_.reset(new (std::nothrow) range_lock_stats());
			if (!stats_)
				return -ENOMEM;
		}
		return range_lock_tree_enable_stats(&t_, stats_.get());
	}
	/// The same in the caller's @storage, which must outlive this tree.
	/// Return: 0; -EBUSY if enabled with other storage (this object's
	/// included); -ENOMEM (a tree with segments).
	int enable_stats(range_lock_stats &storage) noexcept
	{
		return range_lock_tree_enable_stats(&t_, &storage);
	}
	/// Copy the counters into @out (range_lock_tree_get_stats()).
	/// Return: 0, or -ENODATA if statistics were never enabled.
	int get_stats(range_lock_stats &out) noexcept
	{
		return range_lock_tree_get_stats(&t_, &out);
	}
	/// Zero the counters; held_now and waiting_now restart from the
	/// requests present now (range_lock_tree_reset_stats()).
	void reset_stats() noexcept { range_lock_tree_reset_stats(&t_); }
	/// Where the holds lay: within one segment, spanning, on the tree
	/// itself (range_lock_tree_get_segment_stats()).
	/// Return: 0, or -ENODATA if statistics are not enabled.
	int get_segment_stats(range_lock_segment_stats &out) noexcept
	{
		return range_lock_tree_get_segment_stats(&t_, &out, sizeof(out));
	}

	range_lock_tree *native_handle() noexcept { return &t_; }

private:
	range_lock_tree t_;
	// enable_stats()'s storage; destroyed after ~tree() has destroyed t_
	std::unique_ptr<range_lock_stats> stats_;
};

/// The tag value for tree(fifo).
inline constexpr tree::fifo_t fifo{};

/// One request for [start, last] of a tree; see the top of this file.
class range {
public:
	/// [start, last] of @t (inclusive); aborts if start > last.
	range(range_lock_tree &t, std::uint64_t start, std::uint64_t last) noexcept
		: tree_(&t)
	{
		if (range_lock_init(&lock_, start, last) != 0)
			detail::die("rangelock::range", "start > last");
	}
	range(tree &t, std::uint64_t start, std::uint64_t last) noexcept
		: range(*t.native_handle(), start, last)
	{
	}
	/// The whole resource, [0, RANGE_LOCK_FULL].
	explicit range(range_lock_tree &t) noexcept : tree_(&t)
	{
		range_lock_init_full(&lock_);
	}
	explicit range(tree &t) noexcept : range(*t.native_handle()) {}

	/// Aborts if the range is still held through this object's calls.
	~range()
	{
		if (mode_ != mode::none)
			detail::die("rangelock::range::~range",
				    "range destroyed while held");
	}
	range(const range &) = delete;
	range &operator=(const range &) = delete;

	// Lockable, TimedLockable: the write side.
	void lock() noexcept
	{
		range_write_lock(tree_, &lock_);
		mode_ = mode::write;
	}
	bool try_lock() noexcept { return held_if(range_write_trylock(tree_, &lock_) == 1, mode::write); }
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel) noexcept
	{
		return try_lock_until(detail::deadline_after(rel));
	}
	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) noexcept
	{
		return timed(range_write_timedlock, t, mode::write);
	}
	void unlock() noexcept
	{
		range_write_unlock(tree_, &lock_); // aborts unless write-held
		mode_ = mode::none;
	}

	// SharedLockable, SharedTimedLockable: the read side.
	void lock_shared() noexcept
	{
		range_read_lock(tree_, &lock_);
		mode_ = mode::read;
	}
	bool try_lock_shared() noexcept { return held_if(range_read_trylock(tree_, &lock_) == 1, mode::read); }
	template <class Rep, class Period>
	bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &rel) noexcept
	{
		return try_lock_shared_until(detail::deadline_after(rel));
	}
	template <class Clock, class Duration>
	bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &t) noexcept
	{
		return timed(range_read_timedlock, t, mode::read);
	}
	void unlock_shared() noexcept
	{
		range_read_unlock(tree_, &lock_); // aborts unless read-held
		mode_ = mode::none;
	}

	/// A write hold becomes a read hold atomically (range_downgrade_write());
	/// release it with unlock_shared().
	void downgrade() noexcept
	{
		range_downgrade_write(tree_, &lock_); // aborts unless write-held
		mode_ = mode::read;
	}

	/// Extend the held range to [start, last], holding the old one all the
	/// while (range_lock_grow(): waits for conflicts on the added units
	/// only); aborts unless held and [start, last] contains the range.
	void grow(std::uint64_t start, std::uint64_t last) noexcept
	{
		if (range_lock_grow(tree_, &lock_, start, last) != 0)
			detail::die("rangelock::range::grow", "not a super-range");
	}
	/// grow() only if that needs no wait (range_lock_grow_try()).
	bool try_grow(std::uint64_t start, std::uint64_t last) noexcept
	{
		const int r = range_lock_grow_try(tree_, &lock_, start, last);

		if (r < 0)
			detail::die("rangelock::range::try_grow", "not a super-range");
		return r == 1;
	}
	/// Keep only [start, last] of the held range (range_lock_shrink():
	/// never waits); aborts unless held and it is a sub-range.
	void shrink(std::uint64_t start, std::uint64_t last) noexcept
	{
		if (range_lock_shrink(tree_, &lock_, start, last) != 0)
			detail::die("rangelock::range::shrink", "not a sub-range");
	}

	std::uint64_t start() const noexcept { return lock_.start; }
	std::uint64_t last() const noexcept { return lock_.last; }
	/// For the C calls without a C++ form (_interruptible, _killable,
	/// _nested); the destructor's check does not see holds taken there.
	range_lock *native_handle() noexcept { return &lock_; }
	range_lock_tree *tree_handle() noexcept { return tree_; }

private:
	enum class mode { none, read, write };
	using timed_call = int (*)(range_lock_tree *, range_lock *, clockid_t,
				   const timespec *);

	bool held_if(bool got, mode m) noexcept
	{
		if (got)
			mode_ = m;
		return got;
	}

	bool timed_on(timed_call call, clockid_t clk, const timespec &ts, mode m) noexcept
	{
		const int r = call(tree_, &lock_, clk, &ts);

		if (r != 0 && r != -ETIMEDOUT)
			detail::die("rangelock::range::try_lock_until",
				    "unexpected error from range_*_timedlock");
		return held_if(r == 0, m);
	}

	template <class Clock, class Duration>
	bool timed(timed_call call, const std::chrono::time_point<Clock, Duration> &t,
		   mode m) noexcept
	{
		return detail::wait_until(t, [&](clockid_t clk, const timespec &ts) {
			return timed_on(call, clk, ts, m);
		});
	}

	range_lock_tree *tree_;
	range_lock lock_;
	mode mode_ = mode::none;
};

class read_hold;

namespace detail {

// What write_hold and read_hold share: a range pointer and whether it is held.
template <class Self>
class hold_base {
public:
	hold_base() noexcept = default;
	hold_base(const hold_base &) = delete;
	hold_base &operator=(const hold_base &) = delete;

	bool owns_lock() const noexcept { return owns_; }
	explicit operator bool() const noexcept { return owns_; }
	/// The range, or nullptr.
	range *get_range() const noexcept { return r_; }
	/// Forget the range without unlocking it; returns it.
	range *release() noexcept
	{
		range *r = r_;
		r_ = nullptr;
		owns_ = false;
		return r;
	}
	void swap(Self &o) noexcept
	{
		std::swap(r_, o.r_);
		std::swap(owns_, o.owns_);
	}

protected:
	hold_base(range *r, bool owns) noexcept : r_(r), owns_(owns) {}
	hold_base(hold_base &&o) noexcept : r_(o.r_), owns_(o.owns_)
	{
		o.r_ = nullptr;
		o.owns_ = false;
	}
	void take(hold_base &&o) noexcept
	{
		r_ = o.r_;
		owns_ = o.owns_;
		o.r_ = nullptr;
		o.owns_ = false;
	}
	void can_lock(const char *call) const noexcept
	{
		if (!r_)
			die(call, "hold without a range");
		if (owns_)
			die(call, "hold already owns its range");
	}
	void can_unlock(const char *call) const noexcept
	{
		if (!owns_)
			die(call, "hold does not own a range");
	}

	range *r_ = nullptr;
	bool owns_ = false;
};

} // namespace detail

/// A movable RAII write hold on a range: std::unique_lock<range>, plus
/// downgrade().  The destructor unlocks a range it owns.
class write_hold : public detail::hold_base<write_hold> {
public:
	write_hold() noexcept = default;
	explicit write_hold(range &r) noexcept : hold_base(&r, false) { lock(); }
	write_hold(range &r, std::defer_lock_t) noexcept : hold_base(&r, false) {}
	write_hold(range &r, std::try_to_lock_t) noexcept : hold_base(&r, false) { try_lock(); }
	write_hold(range &r, std::adopt_lock_t) noexcept : hold_base(&r, true) {}
	template <class Rep, class Period>
	write_hold(range &r, const std::chrono::duration<Rep, Period> &rel) noexcept
		: hold_base(&r, false)
	{
		try_lock_for(rel);
	}
	template <class Clock, class Duration>
	write_hold(range &r, const std::chrono::time_point<Clock, Duration> &t) noexcept
		: hold_base(&r, false)
	{
		try_lock_until(t);
	}
	write_hold(write_hold &&o) noexcept : hold_base(std::move(o)) {}
	write_hold &operator=(write_hold &&o) noexcept
	{
		if (this != &o) {
			if (owns_)
				r_->unlock();
			take(std::move(o));
		}
		return *this;
	}
	~write_hold()
	{
		if (owns_)
			r_->unlock();
	}

	void lock() noexcept
	{
		can_lock("rangelock::write_hold::lock");
		r_->lock();
		owns_ = true;
	}
	bool try_lock() noexcept
	{
		can_lock("rangelock::write_hold::try_lock");
		return owns_ = r_->try_lock();
	}
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel) noexcept
	{
		can_lock("rangelock::write_hold::try_lock_for");
		return owns_ = r_->try_lock_for(rel);
	}
	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) noexcept
	{
		can_lock("rangelock::write_hold::try_lock_until");
		return owns_ = r_->try_lock_until(t);
	}
	void unlock() noexcept
	{
		can_unlock("rangelock::write_hold::unlock");
		r_->unlock();
		owns_ = false;
	}

	/// The write hold becomes a read hold atomically; this hold is empty
	/// afterwards.
	read_hold downgrade() noexcept;
};

/// A movable RAII read hold on a range: std::shared_lock<range>, whose
/// lock/try_lock/unlock take and release the range for reading.
class read_hold : public detail::hold_base<read_hold> {
public:
	read_hold() noexcept = default;
	explicit read_hold(range &r) noexcept : hold_base(&r, false) { lock(); }
	read_hold(range &r, std::defer_lock_t) noexcept : hold_base(&r, false) {}
	read_hold(range &r, std::try_to_lock_t) noexcept : hold_base(&r, false) { try_lock(); }
	read_hold(range &r, std::adopt_lock_t) noexcept : hold_base(&r, true) {}
	template <class Rep, class Period>
	read_hold(range &r, const std::chrono::duration<Rep, Period> &rel) noexcept
		: hold_base(&r, false)
	{
		try_lock_for(rel);
	}
	template <class Clock, class Duration>
	read_hold(range &r, const std::chrono::time_point<Clock, Duration> &t) noexcept
		: hold_base(&r, false)
	{
		try_lock_until(t);
	}
	read_hold(read_hold &&o) noexcept : hold_base(std::move(o)) {}
	read_hold &operator=(read_hold &&o) noexcept
	{
		if (this != &o) {
			if (owns_)
				r_->unlock_shared();
			take(std::move(o));
		}
		return *this;
	}
	~read_hold()
	{
		if (owns_)
			r_->unlock_shared();
	}

	void lock() noexcept
	{
		can_lock("rangelock::read_hold::lock");
		r_->lock_shared();
		owns_ = true;
	}
	bool try_lock() noexcept
	{
		can_lock("rangelock::read_hold::try_lock");
		return owns_ = r_->try_lock_shared();
	}
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel) noexcept
	{
		can_lock("rangelock::read_hold::try_lock_for");
		return owns_ = r_->try_lock_shared_for(rel);
	}
	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) noexcept
	{
		can_lock("rangelock::read_hold::try_lock_until");
		return owns_ = r_->try_lock_shared_until(t);
	}
	void unlock() noexcept
	{
		can_unlock("rangelock::read_hold::unlock");
		r_->unlock_shared();
		owns_ = false;
	}
};

inline read_hold write_hold::downgrade() noexcept
{
	can_unlock("rangelock::write_hold::downgrade");
	range &r = *release();
	r.downgrade();
	return read_hold(r, std::adopt_lock);
}

inline void swap(write_hold &a, write_hold &b) noexcept { a.swap(b); }
inline void swap(read_hold &a, read_hold &b) noexcept { a.swap(b); }

/// The mode of a member of a range_set.
enum class access : int { read = RANGE_LOCK_READ, write = RANGE_LOCK_WRITE };

/// Several ranges of one tree taken as ONE arrival (range_lock_many()): all
/// or nothing, without deadlock, and the members never conflict with each
/// other -- two writers of one set on the same unit both hold it.  This is
/// how one thread takes ranges that overlap; see the top of this file for
/// why std::lock cannot.  Lockable and TimedLockable: std::unique_lock,
/// std::scoped_lock and std::lock_guard over a range_set are its holds.
///
///     rangelock::range_set s(file_lock, {{src, src + n - 1, rangelock::access::read},
///                                        {dst, dst + n - 1, rangelock::access::write}});
///     std::unique_lock hold(s); // copy [src, +n) to [dst, +n), overlapping or not
///
/// The set owns its requests (so, as a range, it neither copies nor moves)
/// and is used by one thread at a time.  add() allocates (std::vector):
/// running out of memory there terminates, as in any noexcept call.  On a
/// tree bound to a file, members must not overlap unless both read (the
/// C call aborts).  The semantics, order and deadlock rules are those of
/// range_lock_many() in <rangelock/rangelock.h>.
class range_set {
public:
	/// One member: [start, last] for reading or writing.
	struct member {
		std::uint64_t start;
		std::uint64_t last;
		access mode;
	};

	explicit range_set(range_lock_tree &t) noexcept : tree_(&t) {}
	explicit range_set(tree &t) noexcept : range_set(*t.native_handle()) {}
	range_set(range_lock_tree &t, std::initializer_list<member> m) noexcept : tree_(&t)
	{
		locks_.reserve(m.size());
		items_.reserve(m.size());
		for (const member &x : m)
			add(x.start, x.last, x.mode);
	}
	range_set(tree &t, std::initializer_list<member> m) noexcept
		: range_set(*t.native_handle(), m)
	{
	}
	/// Aborts if the set is still held through this object's calls.
	~range_set()
	{
		if (held_)
			detail::die("rangelock::range_set::~range_set",
				    "set destroyed while held");
	}
	range_set(const range_set &) = delete;
	range_set &operator=(const range_set &) = delete;

	/// Add [start, last] (inclusive) in mode @a; aborts if start > last or
	/// while the set is held.
	void add(std::uint64_t start, std::uint64_t last, access a) noexcept
	{
		if (held_)
			detail::die("rangelock::range_set::add", "set is held");
		locks_.emplace_back();
		if (range_lock_init(&locks_.back(), start, last) != 0)
			detail::die("rangelock::range_set::add", "start > last");
		items_.push_back({nullptr, static_cast<int>(a)});
		for (std::size_t i = 0; i < items_.size(); i++)
			items_[i].lock = &locks_[i]; // the vector may have moved
	}

	void lock() noexcept
	{
		can_lock("rangelock::range_set::lock");
		range_lock_many(tree_, items_.data(), count());
		held_ = true;
	}
	bool try_lock() noexcept
	{
		can_lock("rangelock::range_set::try_lock");
		return held_ = range_lock_many_try(tree_, items_.data(), count()) == 1;
	}
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel) noexcept
	{
		return try_lock_until(detail::deadline_after(rel));
	}
	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) noexcept
	{
		can_lock("rangelock::range_set::try_lock_until");
		return held_ = detail::wait_until(t, [&](clockid_t clk, const timespec &ts) {
			const int r = range_lock_many_timed(tree_, items_.data(), count(), clk, &ts);

			if (r != 0 && r != -ETIMEDOUT)
				detail::die("rangelock::range_set::try_lock_until",
					    "unexpected error from range_lock_many_timed");
			return r == 0;
		});
	}
	/// Unlock every member (range_unlock_many()).
	void unlock() noexcept
	{
		if (!held_)
			detail::die("rangelock::range_set::unlock", "set not held");
		range_unlock_many(tree_, items_.data(), count());
		held_ = false;
	}

	std::size_t size() const noexcept { return items_.size(); }
	/// The members, for the C calls (unlocking one member on its own, the
	/// _interruptible and _killable forms); the destructor's check does not
	/// see holds taken or released there.
	const range_lock_item *native_items() const noexcept { return items_.data(); }
	range_lock_tree *tree_handle() noexcept { return tree_; }

private:
	unsigned count() const noexcept { return static_cast<unsigned>(items_.size()); }
	void can_lock(const char *call) const noexcept
	{
		if (held_)
			detail::die(call, "set already held");
	}

	range_lock_tree *tree_;
	std::vector<range_lock> locks_;
	std::vector<range_lock_item> items_;
	bool held_ = false;
};

/// An asynchronous request for [start, last] (struct range_lock_async):
/// lock_async() or lock_shared_async() holds it now or queues it, and the
/// release that grants a queued one calls completed() on the releasing
/// thread.  Derive from it and override completed():
///
///     struct extent_io : rangelock::async_range {
///         using async_range::async_range;
///         void completed(int status) noexcept override
///         {
///             post_to_loop(this, status); // keep it short
///         }
///     };
///
/// completed(status) is range_lock_async_fn: called exactly once per
/// queued request that is not withdrawn, after every internal lock is
/// dropped, with status 0 (held: unlock() it, from any thread) or -EAGAIN
/// (a tree bound to a file only: another process holds the bytes; nothing
/// held).  The rules of <rangelock/rangelock.h> apply: it must return, must
/// not take a lock its releasing caller may hold, and may call only the
/// calls that do not wait (a lock call that has to wait aborts).  Neither
/// the library nor this class touches the object after completed()
/// returns, so completed() may destroy it (delete this) as its last act,
/// once it has unlocked it.
///
/// Lifetime: the object is the request.  From a lock_async() or
/// lock_shared_async() that returned -EINPROGRESS until completed() has
/// run or cancel() has returned 0, the library owns it: do not destroy or
/// reuse it meanwhile.  It neither copies nor moves.  The destructor
/// aborts if the request is queued or held.  A queued request stands in the
/// tree like a held one: the thread that would unlock it must not block on
/// a conflicting range meanwhile.
class async_range {
public:
	/// [start, last] of @t (inclusive); aborts if start > last.
	async_range(range_lock_tree &t, std::uint64_t start, std::uint64_t last) noexcept
		: tree_(&t)
	{
		if (range_lock_async_init(&req_, start, last, &async_range::done, this) != 0)
			detail::die("rangelock::async_range", "start > last");
	}
	async_range(tree &t, std::uint64_t start, std::uint64_t last) noexcept
		: async_range(*t.native_handle(), start, last)
	{
	}
	/// Aborts if the request is queued or held.
	virtual ~async_range()
	{
		if (state_.load(std::memory_order_relaxed) != idle)
			detail::die("rangelock::async_range::~async_range",
				    "request destroyed while queued or held");
	}
	async_range(const async_range &) = delete;
	async_range &operator=(const async_range &) = delete;

	/// Lock for writing without waiting (range_write_lock_async()).
	/// Return: 0 (held now; completed() is not called), -EINPROGRESS
	/// (queued: completed() will be called, unless cancel() withdraws it;
	/// the object may already be completed -- or destroyed by completed()
	/// -- when this returns), -EAGAIN or -EINVAL as the C call.
	int lock_async() noexcept { return submit(range_write_lock_async, queued_write, write); }
	/// The same for reading (range_read_lock_async()).
	int lock_shared_async() noexcept { return submit(range_read_lock_async, queued_read, read); }

	/// Withdraw a queued request (range_lock_async_cancel()).  Return: 0
	/// when withdrawn (completed() is never called; the object is yours
	/// again); -EALREADY when it was not queued any more: held at
	/// submission, or granted -- completed() has run, is running or is
	/// about to run, exactly once: wait for what it signals before you
	/// unlock or destroy the object.
	int cancel() noexcept
	{
		const int r = range_lock_async_cancel(tree_, &req_);

		if (r == 0)
			state_.store(idle, std::memory_order_relaxed);
		return r;
	}

	/// Unlock a held request by its mode; aborts unless held.
	void unlock() noexcept
	{
		const int s = state_.load(std::memory_order_relaxed);

		if (s == write)
			range_write_unlock(tree_, &req_.lock);
		else if (s == read)
			range_read_unlock(tree_, &req_.lock);
		else
			detail::die("rangelock::async_range::unlock", "request not held");
		state_.store(idle, std::memory_order_relaxed);
	}

	/// Held now (granted at submission or by a completion that ran with 0).
	bool owns_lock() const noexcept
	{
		const int s = state_.load(std::memory_order_relaxed);
		return s == read || s == write;
	}
	std::uint64_t start() const noexcept { return req_.lock.start; }
	std::uint64_t last() const noexcept { return req_.lock.last; }
	range_lock_async *native_handle() noexcept { return &req_; }
	range_lock_tree *tree_handle() noexcept { return tree_; }

protected:
	/// The completion; see above.
	virtual void completed(int status) noexcept = 0;

private:
	enum : int { idle, queued_read, queued_write, read, write };
	using submit_call = int (*)(range_lock_tree *, range_lock_async *);

	int submit(submit_call call, int queued, int held) noexcept
	{
		// Before the call: a completion may run on another thread before
		// it returns, and then the object may be gone.
		state_.store(queued, std::memory_order_relaxed);
		const int r = call(tree_, &req_);

		if (r == 0)
			state_.store(held, std::memory_order_relaxed);
		else if (r != -EINPROGRESS)
			state_.store(idle, std::memory_order_relaxed);
		return r; // -EINPROGRESS: *this is the completion's now
	}

	static void done(range_lock_async *req, int status) noexcept
	{
		auto *self = static_cast<async_range *>(req->arg);
		const int q = self->state_.load(std::memory_order_relaxed);

		self->state_.store(status != 0 ? idle : q == queued_write ? write : read,
				   std::memory_order_relaxed);
		self->completed(status); // may destroy *self: nothing after it
	}

	range_lock_tree *tree_;
	range_lock_async req_;
	std::atomic<int> state_{idle};
};

} // namespace rangelock

#endif // RANGELOCK_RANGELOCK_HPP
