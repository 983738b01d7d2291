/* SPDX-License-Identifier: MIT */
/*
 * rangelock.pml -- a SPIN model of the locking protocol of src/rangelock.c
 * (with src/tree_lock.h), at the level of its atomic steps.  docs/model.md
 * explains it; a change to either side must be mirrored on the other.
 *
 * MODEL STEP -> src/
 * ==================
 * here                          what it does                 src/
 * ----------------------------  ---------------------------  -----------------
 * tw, TW_*                      the tree's lock word          tree_lock.h
 * start: "tw == TW_FREE ->"     fast path: CAS(0 -> request   lock_common(),
 *                               | mode), held outside tree    tree_fast_acquire()
 * CS_BEGIN / CS_BEGIN_IF        take the internal lock; a     tree_lock(),
 *   + materialise()             fast holder is displaced and  tree_lock_acquire()
 *                               inserted (count 0, first)     (+ _slow)
 * CS_END, TREE_UNLOCK           word = NONEMPTY or FREE       tree_unlock()
 * start: (atomic)               count + insert; a busy        lock_common(),
 *                               trylock inserts nothing       trylock_common()
 * count_blockers()              earlier intersecting          count_blockers()
 *                               conflicting requests
 * "rd[i] = ...; nwait++"        seqnum, mode, wait word =     insert_request()
 *                               count << 1, nr_waiting
 * LOOK                          loop head of the waiter       wait_loop()
 * spin:                         next in line: clear SLEEPING  wait_loop(),
 *                               by CAS, spin (loads)          spin_for_grant()
 * cas:                          CAS(word, v, v | SLEEPING)    wait_loop()
 * fwait:, blocked "if"          FUTEX_WAIT(word, v): block    rl_wait()
 *                               iff word == v; woken,         (wait_futex.c)
 *                               spurious, EINTR/ETIMEDOUT,
 *                               end of a killable slice
 * fwait:/waited: K_KILL ->      pthread_testcancel() before   wait_loop() (kind
 *   cancelled                   and after each slice          WAIT_KILLABLE)
 * give_up:                      withdraw; keep a won grant    withdraw_request(
 *                                                             SIGNAL / TIMEOUT)
 * cancelled:                    withdraw; release a won one   withdraw_on_cancel()
 * remove_request(why)           erase; no walk if nwait == 0; remove_request()
 *                               else decrement later
 *                               intersecting conflicting
 * put_blocker(k)                fetch_sub; 2 -> 1 with        put_blocker()
 *                               SLEEPING: early wake; 1 -> 0:
 *                               grant, nwait--, wake if
 *                               SLEEPING (wake list)
 * wake_flush()                  FUTEX_WAKE after unlock       wake_list_flush(),
 *                                                             rl_wake_one()
 * owner: first option           downgrade: check_held, mode   range_downgrade_
 *                               -> reader, later readers      write()
 * owner: second option          fast release CAS              tree_fast_release()
 * owner: third option           unlock through the tree       unlock_common()
 * check_inv(), ASSERT_COUNTED   the counting invariant and    DESIGN comment;
 *                               nr_waiting                    rl_check_tree()
 * shadow_enter/leave            the caller's critical         (the caller)
 *                               section: exclusion
 *
 * ABSTRACTIONS (argued in docs/model.md): one atomic step per critical
 * section (-DSPLIT_CS checks that); TL_SLEEPERS and the internal lock's own
 * futex are not modelled; seqnums are ranks; spin_for_grant()'s loads are
 * one load; a fast-path CAS may fail on a free empty tree (it raced with a
 * critical section; -DEXACT_FAST_CAS forbids that); spurious futex
 * wake-ups: one per run; sequentially consistent memory; statistics off.
 *
 * THREADS: N = 3.  Each picks read or write and a range over NUNITS units,
 * locks (fast path, tree, or trylock), waits if counted -- as a plain lock
 * call or as the thread's giving-up call: thread 0 _interruptible, thread 1
 * _timedlock, thread 2 _killable (-DALL_KINDS: any thread any call;
 * -DPLAIN_ONLY: plain calls only) -- holds, may downgrade, unlocks.  With
 * -DROUNDS=r (-DROUNDS0 for thread 0) at most r requests per thread, else
 * for ever.  Outside LIVENESS a thread may stop, so a waiter left behind by
 * a lost wake-up is an invalid end state.
 *
 * PROPERTIES: exclusion (shadow assertions); the counting invariant and
 * nr_waiting (check_inv(), ASSERT_COUNTED; off with -DNO_INVARIANT);
 * check_held(); no invalid end state; progress (-DLIVENESS, pan -a -f):
 * every request that waits is eventually granted or gives up.
 *
 * MUTANTS (one line behind a macro each; each must make the check fail)
 *   MUT_READER_NO_WRITERS         count_blockers(): a reader counts nobody
 *   MUT_UNLOCK_NO_UNACCOUNT       unlock: remove_request() skips its walk
 *   MUT_GIVEUP_UNACCOUNT_READERS  withdraw_request(): the walk decrements
 *                                 later requests without the conflict test
 *   MUT_WAKE_BEFORE_GRANT         put_blocker(): rl_wake_one() first, then
 *                                 the fetch_sub that grants
 */

#ifndef NUNITS
#define NUNITS 3
#endif
#if defined(ROUNDS) && !defined(ROUNDS0)
#define ROUNDS0 ROUNDS
#endif
#define N 3

/* why remove_request() runs */
#define W_UNLOCK 0
#define W_GIVEUP 1

#define SLEEPING    1
#define ONE_BLOCKER 2

#define INTERSECTS(a, b)  (st[a] <= la[b] && st[b] <= la[a])
#define CONFLICT(ra, rb)  (!((ra) && (rb)))

/* count_blockers()'s test: does a new request of mode ra count one of rb? */
#ifndef MUT_READER_NO_WRITERS
#define COUNTS(ra, rb)    CONFLICT(ra, rb)
#else
#define COUNTS(ra, rb)    (!(ra) && CONFLICT(ra, rb))	/* mutant */
#endif

/* the tree's lock word (tree_lock.h), without TL_SLEEPERS: the internal
 * lock's own futex protocol is not modelled */
#define TW_FREE      0	/* free, tree empty: a fast path may start */
#define TW_LOCKED    1	/* internal lock held */
#define TW_NONEMPTY  4	/* free, requests in the tree */
#define TW_FAST(k, r) (8 + 2 * (k) + (r))	/* request k fast held, r: reader */

/* ---- shared state --------------------------------------------------- */
byte tw;              /* tree->lock_word */
bit  intree[N];       /* request i is a node of the tree */
bit  rd[N];           /* RL_READER flag of request i */
byte st[N], la[N];    /* request i's [start, last] */
byte seq[N];          /* rank of request i's seqnum among those in tree */
byte nreq;            /* tree->nr_requests (= next rank) */
byte nwait;           /* tree->nr_waiting: requests in the tree counted > 0 */
byte word[N];         /* wait_word: blocking << 1 | SLEEPING */
bit  fblocked[N];     /* thread i is blocked in FUTEX_WAIT on word[i] */
bit  waiting[N];      /* ghost: request i waits (for the progress claim) */
bit  spurious = 1;    /* budget of spurious futex wake-ups (one per run) */
byte sr[NUNITS];      /* ghost shadow: readers in the unit */
bit  sw[NUNITS];      /* ghost shadow: a writer in the unit */

hidden byte hk, hm, hc;   /* scratch for d_step computations */

/* part of the counting invariant: a decrement never finds a zero count */
#ifndef NO_INVARIANT
#define ASSERT_COUNTED(w)  assert((w) >= ONE_BLOCKER)
#else
#define ASSERT_COUNTED(w)  skip
#endif

/* tree_lock(): take the internal lock; a fast holder is displaced and
 * materialised: inserted as a held request, first in arrival order (the
 * tree was empty), count 0. */
inline materialise()
{
	d_step {
		if
		:: tw >= TW_FAST(0, 0) ->
			hk = (tw - TW_FAST(0, 0)) / 2;
			assert(nreq == 0 && !intree[hk]);
			rd[hk] = (tw - TW_FAST(0, 0)) % 2;
			seq[hk] = 0; nreq = 1; intree[hk] = 1; word[hk] = 0;
			hk = 0
		:: else
		fi;
		tw = TW_LOCKED
	}
}

/* tree_unlock() */
#define TREE_UNLOCK  tw = (nreq > 0 -> TW_NONEMPTY : TW_FREE)

/* ---- tree lock critical sections -------------------------------------- */
#if !defined(MUT_WAKE_BEFORE_GRANT) && !defined(SPLIT_CS)
#define CS_BEGIN  atomic { tw != TW_LOCKED -> materialise();
#define CS_BEGIN_IF(c)  atomic { tw != TW_LOCKED && (c) -> materialise();
#define CS_END    TREE_UNLOCK }
#else
#define CS_BEGIN  atomic { tw != TW_LOCKED -> materialise() };
#define CS_BEGIN_IF(c)  atomic { tw != TW_LOCKED && (c) -> materialise() };
#define CS_END    TREE_UNLOCK
#endif

/* The invariant of the DESIGN comment, whenever tree_lock is free:
 * blocking(R) = #{Q in tree: Q.seq < R.seq, Q intersects R, Q, R conflict}
 * and tree->nr_waiting = #{R in tree: blocking(R) > 0}. */
inline check_inv()
{
#ifndef NO_INVARIANT
	d_step {
		hk = 0; hm = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] && (word[hk] >> 1) > 0 -> hm++
			:: else
			fi;
			hk++
		:: else -> break
		od;
		assert(hm == nwait);
		hk = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] ->
				hc = 0; hm = 0;
				do
				:: hm < N ->
					if
					:: intree[hm] && seq[hm] < seq[hk] &&
					   INTERSECTS(hm, hk) && CONFLICT(rd[hm], rd[hk]) ->
						hc++
					:: else
					fi;
					hm++
				:: else -> break
				od;
				assert((word[hk] >> 1) == hc)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0; hm = 0; hc = 0
	}
#else
	skip
#endif
}

/* count_blockers(): requests in the tree that request i must wait for */
inline count_blockers()
{
	d_step {
		cnt = 0; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   COUNTS(isr, rd[hk]) -> cnt++
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

/* put_blocker(): fetch_sub(ONE_BLOCKER, release).  Old count 2 with
 * SLEEPING: next in line and asleep, wake it early (to spin).  Old count 1:
 * the grant; nr_waiting--, wake it if it sleeps.  Wakes go on the wake
 * list, flushed after tree_unlock(). */
inline put_blocker(k)
{
#ifndef MUT_WAKE_BEFORE_GRANT
	atomic { old = word[k]; ASSERT_COUNTED(old); word[k] = old - ONE_BLOCKER };
#else
	/* mutant: rl_wake_one() first (decided on a load), then the grant */
	atomic {
		old = word[k];
		if
		:: (old >> 1) == 1 && (old & SLEEPING) -> fblocked[k] = 0
		:: else
		fi
	};
	atomic { old = word[k]; ASSERT_COUNTED(old); word[k] = old - ONE_BLOCKER;
	         if :: (old >> 1) == 1 -> old = old & ~SLEEPING :: else fi };
#endif
	if
	:: (old >> 1) == 2 && (old & SLEEPING) -> wl = wl | (1 << k)
	:: (old >> 1) == 1 ->
		nwait--;
		if
		:: old & SLEEPING -> wl = wl | (1 << k)
		:: else
		fi
	:: else
	fi;
	old = 0
}

/* remove_request(): erase request i, un-account the later requests that
 * counted it (same conflict rule as count_blockers), renumber ranks.  No
 * walk when nr_waiting is 0 (nobody counted anybody).  (src's own fast
 * path, the last request leaving, walks nothing either.) */
inline remove_request(why)
{
	intree[i] = 0;
	nreq--;
#ifdef MUT_UNLOCK_NO_UNACCOUNT
	if
	:: why == W_UNLOCK -> j = N	/* mutant: skip the walk */
	:: else -> j = (nwait == 0 -> N : 0)
	fi;
#else
	j = (nwait == 0 -> N : 0);
#endif
	do
	:: j < N ->
		if
		:: intree[j] && seq[j] > seq[i] && INTERSECTS(i, j) &&
		   (CONFLICT(rd[i], rd[j])
#ifdef MUT_GIVEUP_UNACCOUNT_READERS
		    || why == W_GIVEUP
#endif
		   ) -> put_blocker(j)
		:: else
		fi;
		j++
	:: else -> break
	od;
	j = 0;
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] && seq[hk] > seq[i] -> seq[hk]--
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0;
		/* the request is off the tree: nobody but its owner reads it;
		 * normalise it to keep the state space small */
		seq[i] = 0; rd[i] = 0; word[i] = 0; st[i] = 0; la[i] = 0
	}
}

/* wake_list_flush(): rl_wake_one() on each recorded word, after
 * tree_unlock().  FUTEX_WAKE: whoever is blocked on the word now (it may be
 * a later request of the same thread: a spurious wake-up for it). */
inline wake_flush()
{
	do
	:: wl == 0 -> break
	:: else ->
		atomic {
			if
			:: wl & 1 -> j = 0
			:: else -> if :: wl & 2 -> j = 1 :: else -> j = 2 fi
			fi;
			fblocked[j] = 0;	/* futex_wake */
			wl = wl & ~(1 << j);
			j = 0
		}
	od
}

/* The caller's critical section begins: exclusion on the shadow. */
inline shadow_enter()
{
	d_step {
		waiting[i] = 0;
		hk = st[i];
		do
		:: hk <= la[i] ->
			if
			:: isr -> assert(!sw[hk]); sr[hk]++
			:: else -> assert(!sw[hk] && sr[hk] == 0); sw[hk] = 1
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

inline shadow_leave()
{
	d_step {
		hk = st[i];
		do
		:: hk <= la[i] ->
			if
			:: isr -> sr[hk]--
			:: else -> sw[hk] = 0
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

/* how a counted request waits: the lock call it came from */
#define K_PLAIN 0	/* range_*_lock: spins when next in line, never gives up */
#define K_INTR  1	/* _interruptible: no spin; EINTR -> give up, keep a won grant */
#define K_TIMED 2	/* _timedlock: spins; ETIMEDOUT -> give up, keep a won grant */
#define K_KILL  3	/* _killable: spins; 10 ms wait slices with
			   pthread_testcancel() before and after each; cancelled
			   -> give up, release a won grant */

/* wait_loop()'s loop head, after a fresh value v of the word: granted;
 * next in line and may spin; announce the sleep (CAS); or sleep. */
#define LOOK								\
	if								\
	:: (v >> 1) == 0 -> shadow_enter(); goto owner			\
	:: (v >> 1) == 1 && may_spin -> goto spin			\
	:: (v >> 1) != 0 && !((v >> 1) == 1 && may_spin) &&		\
	   (v & SLEEPING) == 0 -> goto cas				\
	:: (v >> 1) != 0 && !((v >> 1) == 1 && may_spin) &&		\
	   (v & SLEEPING) != 0 -> goto fwait				\
	fi

proctype thread(byte i)
{
	bit  isr;	/* reader request */
	bit  fast;	/* held through the fast path (may be materialised) */
	bit  may_spin;	/* wait_loop()'s may_spin */
	byte kind;	/* K_PLAIN .. K_KILL */
	byte cnt;	/* lock_common()'s blockers */
	byte v;		/* wait_loop()'s v */
	byte wl;	/* wake list, bit k = request k */
	byte old, j;
#ifdef ROUNDS
	byte rounds;	/* requests made so far, less one */
#endif

start:
	atomic {
#ifndef LIVENESS
		/* a thread may stop: a waiter it leaves behind must not hang */
		if
		:: true
		:: true -> goto stop
		fi;
#endif
		/* range_lock_init() and the lock call: mode, range */
		if
		:: isr = 1
		:: isr = 0
		fi;
#if NUNITS == 1
		st[i] = 0; la[i] = 0;
#elif NUNITS == 2
		if
		:: st[i] = 0; la[i] = 0
		:: st[i] = 0; la[i] = 1
		:: st[i] = 1; la[i] = 1
		fi;
#else
		if
		:: st[i] = 0; la[i] = 0
		:: st[i] = 0; la[i] = 1
		:: st[i] = 0; la[i] = 2
		:: st[i] = 1; la[i] = 1
		:: st[i] = 1; la[i] = 2
		:: st[i] = 2; la[i] = 2
		fi;
#endif
		/* the fast path: tree_fast_acquire(), CAS(0 -> request|mode).
		 * It may also fail on a free empty tree (it raced with a
		 * critical section), or not be tried (statistics on). */
		if
		:: tw == TW_FREE ->
			assert(nreq == 0);
			tw = TW_FAST(i, isr); fast = 1;
			shadow_enter(); goto owner
#ifndef EXACT_FAST_CAS
		:: true
#else
		:: tw != TW_FREE
#endif
		fi;
		/* lock_common(): tree_lock(), count the blockers, insert */
		CS_BEGIN
			count_blockers();
			if
#ifndef NO_TRYLOCK
			:: cnt > 0 ->	/* trylock_common(): busy, insert nothing */
				cnt = 0; TREE_UNLOCK; goto leave
#endif
			:: true		/* a lock call, or a trylock that wins */
			fi;
			rd[i] = isr;			/* insert_request() */
			seq[i] = nreq; nreq++;
			intree[i] = 1;
			word[i] = cnt * ONE_BLOCKER;
			if
			:: cnt > 0 -> nwait++; waiting[i] = 1
			:: else
			fi;
			check_inv();
		CS_END;
		if
		:: cnt == 0 -> shadow_enter(); goto owner
		:: else
		fi;
		/* It waits: how (which lock call)?  Plain, or the thread's
		 * way of giving up: thread 0 _interruptible, thread 1
		 * _timedlock, thread 2 _killable (-DALL_KINDS: any thread any
		 * way; a larger state space). */
#ifdef ALL_KINDS
		if
		:: kind = K_PLAIN
		:: kind = K_INTR
		:: kind = K_TIMED
		:: kind = K_KILL
		fi;
#elif defined(PLAIN_ONLY)
		kind = K_PLAIN;
#else
		if
		:: kind = K_PLAIN
		:: kind = i + 1
		fi;
#endif
		may_spin = (kind != K_INTR);
		/* wait_loop()'s first load: it reads what was just stored
		 * (a later look is made anyway before any sleep) */
		v = cnt * ONE_BLOCKER;
		cnt = 0;
		LOOK
	}
spin:	/* next in line: may_spin = false; clear SLEEPING by CAS if set */
	atomic {
		may_spin = 0;
		if
		:: (v & SLEEPING) == 0 -> v = word[i]; LOOK	/* spin_for_grant() */
		:: (v & SLEEPING) != 0 && word[i] == v ->
			v = v & ~SLEEPING; word[i] = v
		:: (v & SLEEPING) != 0 && word[i] != v ->	/* CAS failed */
			v = word[i]; may_spin = 1; LOOK
		fi
	}
	/* spin_for_grant(): acquire loads; then v = load, look again */
	atomic { v = word[i]; LOOK }
cas:	/* CAS(word, v, v | SLEEPING), acquire: announce the sleep */
	atomic {
		if
		:: word[i] == v -> v = v | SLEEPING; word[i] = v
		:: word[i] != v -> v = word[i]; LOOK		/* failed: look again */
		fi
	}
fwait:	/* rl_wait(word, v): FUTEX_WAIT_BITSET */
	if
	:: kind == K_KILL -> goto cancelled	/* pthread_testcancel() before */
	:: atomic { word[i] != v -> goto waited }		/* EAGAIN */
	:: atomic { word[i] == v -> fblocked[i] = 1 }		/* blocks */
	fi;
	/* blocked in the kernel */
	if
	:: atomic { !fblocked[i] -> goto waited }		/* woken: 0 */
	:: atomic { fblocked[i] && spurious ->			/* spurious: 0 */
			fblocked[i] = 0; spurious = 0; goto waited }
	:: atomic { fblocked[i] && kind == K_KILL ->		/* end of a slice */
			fblocked[i] = 0; goto waited }
	:: atomic { fblocked[i] && (kind == K_INTR || kind == K_TIMED) ->
			fblocked[i] = 0; goto give_up }		/* EINTR, ETIMEDOUT */
	fi;
waited:	/* any other return: look again; next in line may spin again */
	if
	:: kind == K_KILL -> goto cancelled	/* pthread_testcancel() after */
	:: atomic { true -> may_spin = (kind != K_INTR); v = word[i]; LOOK }
	fi;

give_up:	/* withdraw_request(GIVE_UP_SIGNAL / GIVE_UP_TIMEOUT) */
	CS_BEGIN
		if
		:: (word[i] >> 1) == 0 ->		/* the grant won: keep it */
			check_inv();
			shadow_enter();
			TREE_UNLOCK;
			goto owner
		:: else ->
			nwait--;
			remove_request(W_GIVEUP);
			waiting[i] = 0;
			check_inv()
		fi;
	CS_END;
	goto leave;

cancelled:	/* withdraw_on_cancel() -> withdraw_request(GIVE_UP_CANCEL) */
	CS_BEGIN
		if				/* granted or not: leave the tree */
		:: (word[i] >> 1) != 0 -> nwait--
		:: else
		fi;
		remove_request(W_GIVEUP);
		waiting[i] = 0;
		check_inv();
	CS_END;
	goto leave;

owner:	/* the lock call returned 0: the caller's critical section */
	if
	:: !isr ->	/* a writer may call range_downgrade_write() */
		CS_BEGIN	/* (materialises a fast hold: its own) */
			/* check_held() */
			assert(intree[i] && (word[i] >> 1) == 0 && !rd[i]);
			/* ghost: from here on a reader */
			shadow_leave(); isr = 1; shadow_enter();
			rd[i] = 1;
			j = (nwait == 0 -> N : 0);
			do
			:: j < N ->
				if
				:: intree[j] && seq[j] > seq[i] &&
				   INTERSECTS(i, j) && rd[j] -> put_blocker(j)
				:: else
				fi;
				j++
			:: else -> break
			od;
			j = 0;
			check_inv();
		CS_END;
		wake_flush();
		goto owner
	:: atomic { fast && tw == TW_FAST(i, isr) ->	/* tree_fast_release() */
			shadow_leave(); tw = TW_FREE; goto leave }
	:: CS_BEGIN_IF(tw != TW_FAST(i, isr))	/* tree_fast_release() failed */
			/* range_{read,write}_unlock() -> unlock_common() */
			/* check_held() */
			assert(intree[i] && (word[i] >> 1) == 0 && rd[i] == isr);
			shadow_leave();
			remove_request(W_UNLOCK);
			check_inv();
		CS_END
	fi;
leave:
	wake_flush();
	skip;
	d_step { isr = 0; fast = 0; may_spin = 0; kind = 0; v = 0 }
#ifdef ROUNDS
	if
	:: rounds + 1 < (i == 0 -> ROUNDS0 : ROUNDS) -> rounds++; goto start
	:: else -> goto stop
	fi;
#else
	goto start;
#endif
stop:
	skip
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run thread(2)
	}
}

#ifdef LIVENESS
/* Every request that waits eventually stops waiting: it is granted, or it
 * gave up (possible only for _interruptible, _timedlock and _killable).
 * Under weak fairness (pan -a -f). */
ltl progress {
	[] ((waiting[0] -> <> !waiting[0]) &&
	    (waiting[1] -> <> !waiting[1]) &&
	    (waiting[2] -> <> !waiting[2]))
}
#endif
