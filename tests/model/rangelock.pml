/* SPDX-License-Identifier: MIT */
/*
 * rangelock.pml -- a SPIN model of the locking protocol of src/rangelock.c.
 *
 * WHAT IS MODELLED, AND WHERE IT LIVES IN src/  (docs/model.md says more)
 * ==============================================
 * Model step                          src/ function (file)
 * ---------------------------------   --------------------------------------
 * CS_BEGIN / CS_END                   tree_lock() / tree_unlock()
 *                                     (rangelock.c; tree_lock.h, tree_lock.c)
 * count_blockers()                    count_blockers()         rangelock.c
 * entry critical section ("enter")    lock_common(): count_blockers() +
 *                                     insert_request() under tree_lock
 * rank-renumbering of seq[]           tree->seqnum++ in insert_request()
 *                                     (abstracted, see "seqnums" below)
 * put_blocker()                       put_blocker(): fetch_sub(ONE_BLOCKER),
 *                                     wake only if old had SLEEPING
 * remove_request()                    remove_request()
 * wake list wl / wake_flush()         struct wake_list, wake_list_add(),
 *                                     wake_list_flush() after tree_unlock()
 * futex_wake()                        rl_wake_one()            wait_futex.c
 * waiter loop "check" ... "blocked"   wait_loop(): acquire load, CAS of
 *                                     SLEEPING, rl_wait(word, v)
 * futex wait (value-checked)          rl_wait() = FUTEX_WAIT_BITSET
 * give-up (signal / timeout)          wait_loop() -> withdraw_request(
 *                                     GIVE_UP_SIGNAL / GIVE_UP_TIMEOUT)
 * cancellation                        withdraw_on_cancel() -> withdraw_request(
 *                                     GIVE_UP_CANCEL), async cancellation
 *                                     window in rl_wait(RL_WAIT_CANCELLABLE)
 * withdraw critical section           withdraw_request()
 * downgrade critical section          range_downgrade_write()
 * unlock critical section             unlock_common() (check_held(),
 *                                     remove_request())
 * check_inv()                         the invariant of the DESIGN comment,
 *                                     rl_check_tree() in checks.c
 * shadow sr[] / sw[]                  the caller's critical section (not src/)
 *
 * The wait word is exactly src's: word = blocking << 1 | SLEEPING.
 *
 * ATOMICITY
 * =========
 * Each tree_lock critical section is ONE atomic step here.  This is a sound
 * reduction of "lock held, other threads run": inside a critical section the
 * holder touches tree-lock-protected data (nobody else can look at it) and
 * each request's wait word at most once (one fetch_sub per later request);
 * everything the other threads do outside tree_lock touches one wait word per
 * step (load, CAS, futex wait), so each such step can be moved before or
 * after the whole critical section.  The mutant MUT_WAKE_BEFORE_GRANT touches
 * a word twice under the lock (wake, then fetch_sub); the reduction does not
 * hold for it, so that mutant runs with the critical sections split into
 * their individual steps (CS_BEGIN / CS_END below).
 *
 * The futex: futex_wait(word, v) blocks atomically only if word == v
 * (otherwise EAGAIN); FUTEX_WAKE unblocks the waiter blocked on the word.
 * A blocked waiter may also return spuriously (budget: one per request, so
 * a lost wake-up still shows as a stuck waiter), with EINTR/ETIMEDOUT if it
 * gives up on a signal or timeout (only while still blocked: a woken futex
 * wait returns 0), or be cancelled anywhere inside rl_wait() (asynchronous
 * cancellation window).
 *
 * seqnums: only their order matters, so a request's seq is its rank among
 * the requests in the tree (0 = oldest); leaving renumbers the later ones.
 * This keeps the state space finite while processes loop for ever.
 *
 * Processes: N = 3 threads, each looping: pick read / write / write that
 * downgrades, a range [s, l] over NUNITS units, and how it waits (plain,
 * interruptible-or-timed = may give up and keep a racing grant, killable =
 * may be cancelled and release a racing grant); lock; critical section
 * (shadow); [downgrade;] unlock.  A thread may also stop, so a waiter left
 * behind by a lost wake-up is an invalid end state.
 *
 * PROPERTIES
 *   - exclusion: assertions on the shadow sr[] (readers) / sw[] (writer);
 *   - counting invariant check_inv() at the end of every critical section;
 *   - no invalid end state (deadlock, lost wake-up): pan's default check;
 *   - progress (-DLIVENESS, pan -a -f): every waiting request is eventually
 *     granted or has given up; for requests that never give up: granted.
 *
 * MUTANTS (each must make the check fail):
 *   MUT_READER_NO_WRITERS         count_blockers(): a reader counts nobody
 *   MUT_UNLOCK_NO_UNACCOUNT       unlock skips remove_request()'s walk
 *   MUT_GIVEUP_UNACCOUNT_READERS  give-up walk decrements later requests
 *                                 without the conflict test (later readers
 *                                 of a reader it never blocked)
 *   MUT_WAKE_BEFORE_GRANT         put_blocker() wakes, then writes the grant
 */

#ifndef NUNITS
#define NUNITS 3
#endif
#if defined(ROUNDS) && !defined(ROUNDS0)
#define ROUNDS0 ROUNDS
#endif
#define N 3

/* how a request waits (the lock call used) */
#define K_PLAIN 0   /* range_*_lock: never gives up */
#define K_KEEP  1   /* _interruptible / _timedlock: EINTR / ETIMEDOUT;
                       a grant that raced it is kept */
#define K_KILL  2   /* _killable: cancellation; a grant that raced it is
                       released like an unlock */

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

/* ---- shared state --------------------------------------------------- */
bit  tl;              /* tree_lock (held only across a split CS: mutant) */
bit  intree[N];       /* request i is a node of the tree */
bit  rd[N];           /* RL_READER flag of request i */
byte st[N], la[N];    /* request i's [start, last] */
byte seq[N];          /* rank of request i's seqnum among those in tree */
byte nreq;            /* tree->nr_requests (= next rank) */
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

/* ---- tree lock critical sections -------------------------------------- */
#ifndef MUT_WAKE_BEFORE_GRANT
#define CS_BEGIN  atomic { tl == 0 -> tl = 1;
#define CS_END    tl = 0 }
#else
#define CS_BEGIN  atomic { tl == 0 -> tl = 1 };
#define CS_END    tl = 0
#endif

/* The invariant of the DESIGN comment, whenever tree_lock is free:
 * blocking(R) = #{Q in tree: Q.seq < R.seq, Q intersects R, Q, R conflict} */
inline check_inv()
{
#ifndef NO_INVARIANT
	d_step {
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

/* put_blocker(): fetch_sub(ONE_BLOCKER, release); the old value says
 * whether that was the grant and whether the waiter sleeps.  The address
 * goes on the wake list, woken after tree_unlock(). */
inline put_blocker(k)
{
#ifndef MUT_WAKE_BEFORE_GRANT
	old = word[k];
	ASSERT_COUNTED(old);
	word[k] = old - ONE_BLOCKER;
	if
	:: (old >> 1) == 1 && (old & SLEEPING) -> wl = wl | (1 << k)
	:: else
	fi;
	old = 0
#else
	/* mutant: rl_wake_one() first, then the grant */
	atomic {
		old = word[k];
		if
		:: (old >> 1) == 1 && (old & SLEEPING) -> fblocked[k] = 0
		:: else
		fi
	};
	atomic { old = word[k]; ASSERT_COUNTED(old);
	         word[k] = old - ONE_BLOCKER; old = 0 }
#endif
}

/* remove_request(): erase request i, un-account the later requests that
 * counted it (same conflict rule as count_blockers), renumber ranks. */
inline remove_request(why)
{
	intree[i] = 0;
	nreq--;
#ifdef MUT_UNLOCK_NO_UNACCOUNT
	if
	:: why == W_UNLOCK -> j = N	/* mutant: skip the walk */
	:: else -> j = 0
	fi;
#else
	j = 0;
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

/* After a fresh look at the word (v): granted, or on to the CAS, or on to
 * the futex wait.  Used inside atomic steps, right after the load. */
#define LOOK							\
	if							\
	:: (v >> 1) == 0 -> shadow_enter(); goto owner		\
	:: (v >> 1) != 0 && (v & SLEEPING) == 0 -> goto cas	\
	:: (v >> 1) != 0 && (v & SLEEPING) != 0 -> goto fwait	\
	fi

proctype thread(byte i)
{
	bit  isr;	/* reader request */
	bit  gu;	/* a waiting request that may give up */
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
		/* lock_common(): under tree_lock, count the blockers, insert */
		CS_BEGIN
			count_blockers();
			if
			:: cnt > 0 ->	/* trylock_common(): busy, insert nothing */
				cnt = 0; tl = 0; goto leave
			:: true		/* a lock call, or a trylock that wins */
			fi;
			rd[i] = isr;			/* insert_request() */
			seq[i] = nreq; nreq++;
			intree[i] = 1;
			word[i] = cnt * ONE_BLOCKER;
			waiting[i] = (cnt > 0);
			check_inv();
		CS_END;
		if
		:: cnt == 0 -> shadow_enter(); goto owner
		:: else
		fi;
		/* It waits: how?  Plain lock calls never give up; the others
		 * (_interruptible, _timedlock, _killable) may, by a signal or
		 * timeout (keeping a grant that raced it) or by cancellation
		 * (releasing it).  The kind is picked when it gives up: a
		 * request gives up once, and before that the kinds behave
		 * alike. */
		if
		:: gu = 0
		:: gu = 1
		fi;
		/* wait_loop(): the RL_GRANT_SPIN loads and the loop's first
		 * load are folded into the CAS below: a load that sees the
		 * grant and a CAS that fails and sees it lead to one state. */
		v = cnt * ONE_BLOCKER;
		cnt = 0
	}
cas:	/* CAS(word, v, v | SLEEPING), acquire: announce the sleep */
	atomic {
		if
		:: word[i] == v -> v = v | SLEEPING; word[i] = v
		:: else -> v = word[i]; LOOK		/* failed: look again */
		fi
	}
fwait:	/* rl_wait(word, v): FUTEX_WAIT_BITSET */
	if
	:: gu -> goto cancelled		/* async cancellation in rl_wait() */
	:: atomic {
		if
		:: word[i] != v -> v = word[i]; LOOK	/* EAGAIN: look again */
		:: word[i] == v -> fblocked[i] = 1	/* blocks (no "else":
							   it would see "gu") */
		fi
	   }
	fi;
	/* blocked in the kernel */
	if
	:: atomic { !fblocked[i] -> v = word[i]; LOOK }	/* woken: look again */
	:: atomic { fblocked[i] && spurious ->		/* spurious: look again */
			fblocked[i] = 0; spurious = 0; v = word[i]; LOOK }
	:: atomic { fblocked[i] && gu ->			/* EINTR / ETIMEDOUT */
			fblocked[i] = 0; goto give_up }
	:: atomic { gu -> fblocked[i] = 0; goto cancelled }	/* cancelled */
	fi;

give_up:	/* withdraw_request(GIVE_UP_SIGNAL / GIVE_UP_TIMEOUT) */
	CS_BEGIN
		if
		:: (word[i] >> 1) == 0 ->		/* the grant won: keep it */
			check_inv();
			shadow_enter();
			tl = 0;				/* tree_unlock() */
			goto owner
		:: else ->
			remove_request(W_GIVEUP);
			waiting[i] = 0;
			check_inv()
		fi;
	CS_END;
	goto leave;

cancelled:	/* withdraw_on_cancel() -> withdraw_request(GIVE_UP_CANCEL) */
	CS_BEGIN
		remove_request(W_GIVEUP);	/* granted or not: leave the tree */
		waiting[i] = 0;
		check_inv();
	CS_END;
	goto leave;

owner:	/* the lock call returned 0: the caller's critical section */
	if
	:: !isr ->	/* a writer may call range_downgrade_write() */
		CS_BEGIN
			/* check_held() */
			assert(intree[i] && (word[i] >> 1) == 0 && !rd[i]);
			/* ghost: from here on a reader */
			shadow_leave(); isr = 1; shadow_enter();
			rd[i] = 1;
			j = 0;
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
	:: CS_BEGIN	/* range_{read,write}_unlock() -> unlock_common() */
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
	d_step { isr = 0; gu = 0; v = 0 }
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
 * gave up (possible only for requests that chose gu).  Under weak fairness
 * (pan -a -f). */
ltl progress {
	[] ((waiting[0] -> <> !waiting[0]) &&
	    (waiting[1] -> <> !waiting[1]) &&
	    (waiting[2] -> <> !waiting[2]))
}
#endif
