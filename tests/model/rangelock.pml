/* SPDX-License-Identifier: MIT */
/*
 * rangelock.pml -- a SPIN model of the locking protocol of src/protocol.c
 * (with src/calls.c, src/waiting.c, src/protocol.h and src/tree_lock.h), at
 * the level of its atomic steps, for both tree policies: -DFIFO is a FIFO tree (strict arrival order); without it, the
 * default policy of issue 12 (bounded overtaking; rules 2-7 of the policy,
 * docs/model.md).  docs/model.md explains it; a change to either side must
 * be mirrored on the other.
 *
 * MODEL STEP -> src/   (rule numbers: the policy, quoted in docs/model.md)
 * ===================
 * here                          what it does                 src/
 * ----------------------------  ---------------------------  -----------------
 * tw, TW_*                      the tree's lock word          tree_lock.h
 * start: "tw == TW_FREE ->"     fast path: CAS(0 -> request   lock_common(),
 *                               | mode), held outside tree    tree_fast_acquire()
 * CS_BEGIN / CS_BEGIN_IF        take the internal lock; a     tree_lock(),
 *   + materialise()             fast holder is displaced and  tree_lock_acquire()
 *                               inserted (word 0, first)      (+ _slow)
 * CS_END, TREE_UNLOCK           word = NONEMPTY or FREE       tree_unlock()
 * start: (atomic)               entry (rules 1-3): count,     lock_common(),
 *                               overtake or insert; a busy    trylock_common()
 *                               trylock inserts nothing
 * count_blockers()              the intersecting conflicting  count_blockers()
 *                               requests; may it overtake?
 * overtake(), add_blocker()     rule 2: seq = min - 1, one    overtake / enter
 *                               blocker more on each passed
 * "rd[i] = ...; nwait++"        FIFO entry: max seq, word =   insert_request()
 *                               count << 2, nr_waiting
 * LOOK                          loop head of the waiter       wait_loop()
 * spin:                         next in line: clear SLEEPING  wait_loop(),
 *                               by CAS, spin (loads)          spin_for_grant()
 * cas:                          CAS(word, v, v | SLEEPING)    wait_loop()
 * fwait:, blocked "if"          FUTEX_WAIT(word, v): block    rl_wait()
 *                               iff word == v; woken,         (wait_futex.c)
 *                               spurious, EINTR/ETIMEDOUT,
 *                               end of a killable slice, the
 *                               hand-off bound (rule 6)
 * claim:                        rule 5: ELIGIBLE, claim       claim_eligible()
 *                               under tree_lock iff word == S
 * mark:, MARK_OR_LOOK           rule 6: bound expired: set    mark_handoff()
 *                               HANDOFF (claim if ELIGIBLE)
 * fwait:/waited: K_KILL ->      pthread_testcancel() before   wait_loop() (kind
 *   cancelled                   and after each slice          WAIT_KILLABLE)
 * give_up:                      rule 7: keep a grant, claim   withdraw_request(
 *                               an ELIGIBLE request, or leave SIGNAL / TIMEOUT)
 * cancelled:                    withdraw; release a won one   withdraw_on_cancel()
 * remove_request(why)           erase; no walk if nwait == 0; remove_request()
 *                               else one blocker off each
 *                               later intersecting conflicting
 * put_blocker(k)                rule 4: count-1 (2 -> 1 with  put_blocker()
 *                               SLEEPING: early wake); 1 ->:
 *                               grant (word 0) or ELIGIBLE
 *                               (word S), wake if SLEEPING
 * wake_flush()                  FUTEX_WAKE after unlock       wake_list_flush(),
 *                                                             rl_wake_one()
 * owner: first option           downgrade: check_held, mode   range_downgrade_
 *                               -> reader, later readers      write()
 * owner: second option          fast release CAS              tree_fast_release()
 * owner: third option           unlock through the tree       unlock_common()
 * check_inv(), ASSERT_COUNTED   the counting invariant, word  DESIGN comment;
 *                               states, nr_waiting            rl_check_tree()
 * granted(k)                    a grant: bounded overtaking,  (ghost)
 *                               precedence order
 * shadow_enter/leave            the caller's critical         (the caller)
 *                               section: exclusion
 *
 * -DFASTREAD: the reader fast path of issue 13 (FASTREAD.md; src/fast_read.c)
 * slot[], S_*, biased, nwr      slot states, BIASED, nr_      fast_read.h, tree->
 *                               writers                       flags, nr_writers
 * owner: ORPHAN option          thread exit: add ORPHAN       key destructor
 * start: "isr && biased"        steps 1-3: bias (relaxed),    fast_read_acquire()
 *                               own slot IDLE; or no slot
 * fpub:                         4 PUBLISH; 5 CHECK; 6 held;   fast_read_acquire()
 *                               7 BACK OUT (CAS), failed:
 *                               tree_lock; tree_unlock: held
 * start: "!isr && biased"       clear BIASED (writer entry,   revoke_fast_readers()
 *   revoke:                     trylock too); scan, CAS PUB
 *                               -> MAT per slot
 * materialise_slot(k)           insert as HELD reader, next   materialise()
 *                               seqnum
 * start: maybe_bias "if"        read slow path, nr_writers 0: maybe_bias()
 *                               set BIASED (countdown: free)
 * TREE_UNLOCK                   NONEMPTY while BIASED         tree_unlock()
 * owner: fslot options          CAS PUB -> IDLE, or under     fast_read_release(),
 *                               tree_lock MAT -> IDLE + erase unlock_common()
 * fast_monitor, fast_granted()  the fast path's invariants    (ghost)
 *
 * -DASYNC: asynchronous requests (src/async.c: lock_async() and the completion queue)
 * start: "asy" choice           range_*_lock_async(): entry   lock_async_local()
 *                               as a lock call, never a
 *                               trylock; counted: queued
 *                               HANDOFF-marked (default),
 *                               aq (the tag)
 * put_blocker(k): "aq[k]"       the grant of a tagged request async_granted():
 *                               appends it to the RELEASING   the releaser's
 *                               thread's queue (aql)          queue
 * wake_flush(): aql loop        its completion, after         rl_async_run()
 *                               tree_unlock(): comp[k] = 1
 * async_q:                      the submitter: waits for the  (the caller's loop)
 *                               completion, or cancels:       range_lock_async_
 *                               queued (aq) -> withdraw       cancel()
 *                               (remove_request), else
 *                               -EALREADY
 *                               and wait for the completion
 *
 * ABSTRACTIONS (argued in docs/model.md): one atomic step per critical
 * section (-DSPLIT_CS checks that); TL_SLEEPERS and the internal lock's own
 * futex are not modelled; seqnums are ranks (an overtaker is inserted just
 * before the first request it passes); spin_for_grant()'s loads are one
 * load; a CAS loop is its successful CAS; a fast-path CAS may fail on a
 * free empty tree (it raced with a critical section; -DEXACT_FAST_CAS
 * forbids that); spurious futex wake-ups: one per run; the hand-off bound
 * may expire at any time (safety) or eventually (-DLIVENESS: the clock
 * process); sequentially consistent memory; statistics off.  FASTREAD: one
 * tree, thread i owns slot i; no fork; -DORPHAN: one fast holder per run
 * may exit (ORPHAN), its process then unlocks as another thread; the
 * inhibit countdown is a free choice; the tree may start biased; a
 * revocation's scan is one step per slot (CAS and insertion separate).
 *
 * THREADS: N = 3.  Each picks read or write and a range over NUNITS units,
 * locks (fast path, tree, or trylock), waits if counted -- as a plain lock
 * call or as the thread's giving-up call: thread 0 _interruptible, thread 1
 * _timedlock, thread 2 _killable (-DALL_KINDS: any thread any call;
 * -DPLAIN_ONLY: plain calls only) -- holds, may downgrade, unlocks.  With
 * -DROUNDS=r (-DROUNDS0 for thread 0) at most r requests per thread, else
 * for ever (-DONE_VICTIM: thread 0 one request, the others for ever;
 * -DTWO_THREADS: thread 2 takes no part).  Outside LIVENESS a thread may stop, so a waiter left behind by
 * a lost wake-up is an invalid end state.
 *
 * PROPERTIES: exclusion (shadow assertions); held <=> word == 0 (a thread
 * enters its critical section only with word 0; two requests with word 0
 * never conflict; nobody writes a word that is 0); the counting invariant,
 * the word states and nr_waiting (check_inv(), ASSERT_COUNTED; off with
 * -DNO_INVARIANT); precedence at each grant (FIFO: arrival order);
 * bounded overtaking (granted(): no request that entered after a waiter
 * marked itself and conflicts with it is granted before it); check_held();
 * no invalid end state; progress (-DLIVENESS, pan -a -f): every request
 * that waits is eventually granted or gives up.  -DASYNC adds: a
 * completion runs exactly once per queued request that is not withdrawn
 * (aw: assert at the completion; a request whose completion never comes
 * leaves its thread blocked: an invalid end state), never for a withdrawn
 * one, only after its grant (word 0, in the tree) and after tree_lock is
 * dropped; nothing overtakes a queued asynchronous request (it counts as
 * marked for granted()'s bounded-overtaking check from its entry on).
 *
 * MUTANTS (one change behind a macro each; each must make the check fail)
 *  both policies (run with -DFIFO):
 *   MUT_READER_NO_WRITERS         count_blockers(): a reader counts nobody
 *   MUT_UNLOCK_NO_UNACCOUNT       unlock: remove_request() skips its walk
 *   MUT_GIVEUP_UNACCOUNT_READERS  withdraw_request(): the walk decrements
 *                                 later requests without the conflict test
 *   MUT_WAKE_BEFORE_GRANT         put_blocker(): rl_wake_one() first, then
 *                                 the CAS that grants
 *  default policy:
 *   MUT_OVERTAKE_NO_BLOCKER       rule 2: the passed waiters get no blocker
 *   MUT_OVERTAKE_MAX_SEQ          rule 2: the overtaker takes a fresh max
 *                                 seq instead of min - 1
 *   MUT_OVERTAKE_NO_NWAIT         rule 2: passing an ELIGIBLE waiter (count
 *                                 0 -> 1) does not count it in nr_waiting
 *   MUT_OVERTAKE_MARKED           rule 2: HANDOFF-marked waiters are passed
 *   MUT_ELIGIBLE_IGNORES_HANDOFF  rule 4: a sleeping marked waiter is made
 *                                 ELIGIBLE instead of granted
 *   MUT_CLAIM_NO_RECHECK          rule 5: the claim does not re-check the
 *                                 word under tree_lock
 *   MUT_MARK_ELIGIBLE             rule 6: an ELIGIBLE waiter marks itself
 *                                 instead of claiming
 *   MUT_GIVEUP_KEEPS_ELIGIBLE     rule 7: a give-up keeps an ELIGIBLE
 *                                 request without claiming it
 *   MUT_NO_HANDOFF                rule 6: a waiter never marks itself
 *                                 (progress fails: overtaken for ever)
 *  the fast path (run with -DFIFO -DFASTREAD -DORPHAN):
 *   MUT_FAST_NO_RECHECK           no CHECK after PUBLISH: holds because it
 *                                 saw BIASED before publishing
 *   MUT_MAT_NO_CAS                the revoker materialises without winning
 *                                 the slot (it stays PUB)
 *   MUT_BIAS_WITH_WRITER          re-biasing with a writer in the tree
 *   MUT_BIASED_WORD_ZERO          tree_unlock() writes 0 while BIASED
 *   MUT_BACKOUT_NOT_HELD          a failed back-out takes the old path
 *                                 (enters a second time)
 *   MUT_BACKOUT_NO_WAIT           a failed back-out returns held without
 *                                 tree_lock(); tree_unlock()
 *   MUT_SCAN_BEFORE_CLEAR         the revoker scans, then clears BIASED
 *   MUT_RELEASE_IGNORES_MAT       the fast release "succeeds" on T|MAT
 *   MUT_SCAN_SKIPS_ORPHANED       (-DORPHAN) a failed scan CAS skips the
 *                                 slot (FASTREAD.md as written), though
 *                                 the owner's exit made it PUB|ORPHAN
 *  asynchronous requests (-DASYNC):
 *   MUT_ASYNC_COMPLETE_NEVER      put_blocker() grants a tagged request but
 *                                 does not queue its completion
 *   MUT_ASYNC_COMPLETE_TWICE      a cancel that finds the request granted
 *                                 runs its completion too
 *   MUT_ASYNC_NOT_MARKED          a queued request is not HANDOFF-marked
 *                                 (default policy: it is overtaken)
 *   MUT_ASYNC_CANCEL_GRANTED      the cancel withdraws a granted request
 *                                 too (no state test)
 */

#ifndef NUNITS
#define NUNITS 3
#endif
#if defined(ROUNDS) && !defined(ROUNDS0)
#define ROUNDS0 ROUNDS
#endif
#define N 3

/* the tree's policy */
#ifdef FIFO
#define FIFO_TREE 1
#else
#define FIFO_TREE 0
#endif

/* why remove_request() runs */
#define W_UNLOCK 0
#define W_GIVEUP 1

/* the wait word: count << 2 | HANDOFF | SLEEPING; held <=> word == 0;
 * ELIGIBLE <=> word == SLEEPING (default policy only) */
#define SLEEPING    1
#define HANDOFF     2
#define ONE_BLOCKER 4
#define COUNT(w)    ((w) >> 2)

#define INTERSECTS(a, b)  (st[a] <= la[b] && st[b] <= la[a])
#define CONFLICT(ra, rb)  (!((ra) && (rb)))

/* count_blockers()'s test: does a new request of mode ra count one of rb? */
#ifndef MUT_READER_NO_WRITERS
#define COUNTS(ra, rb)    CONFLICT(ra, rb)
#else
#define COUNTS(ra, rb)    (!(ra) && CONFLICT(ra, rb))	/* mutant */
#endif

/* rule 2: a counted request that stops an overtaking entry */
#ifndef MUT_OVERTAKE_MARKED
#define NO_PASSING(w)     ((w) == 0 || ((w) & HANDOFF))
#else
#define NO_PASSING(w)     ((w) == 0)			/* mutant */
#endif

/* rule 4: the last blocker goes; is it a grant (else: ELIGIBLE)? */
#ifndef MUT_ELIGIBLE_IGNORES_HANDOFF
#define GRANTS(old)  (FIFO_TREE || ((old) & HANDOFF) || !((old) & SLEEPING))
#else
#define GRANTS(old)  (FIFO_TREE || !((old) & SLEEPING))		/* mutant */
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
byte word[N];         /* wait_word: count << 2 | HANDOFF | SLEEPING */
bit  fblocked[N];     /* thread i is blocked in FUTEX_WAIT on word[i] */
bit  marked[N];       /* request i has set HANDOFF and is not granted yet
			 (the waiter's own "marked" flag; ghost for the
			 bounded-overtaking check) */
byte late[N];         /* ghost: bit k: request k entered while request i
			 was marked, and conflicts with it */
bit  waiting[N];      /* ghost: request i waits (for the progress claim) */
bit  expired[N];      /* ghost, LIVENESS: the hand-off bound of request
			 i's wait has passed (the clock process) */
bit  spurious = 1;    /* budget of spurious futex wake-ups (one per run) */
byte sr[NUNITS];      /* ghost shadow: readers in the unit */
bit  sw[NUNITS];      /* ghost shadow: a writer in the unit */

hidden byte hk, hm, hc;   /* scratch for d_step computations */

#ifdef ASYNC
bit  aq[N];           /* request i is queued asynchronously: RL_ASYNC_TAG,
			 set at the queueing, cleared at the grant or the
			 withdrawal */
bit  aw[N];           /* ghost: its completion is owed (queued, not
			 withdrawn, not completed) */
bit  comp[N];         /* ghost: its completion ran, the submitter not yet
			 told (the caller's loop) */
#endif

#ifdef FASTREAD
/* ---- the reader fast path (issue 13, FASTREAD.md) ------------------------
 * One tree, so a slot's state is FREE, IDLE, T|PUB or T|MAT, and with
 * -DORPHAN (a thread exits) T|PUB|ORPHAN, T|MAT|ORPHAN.  Thread i owns slot i; request i is thread i's
 * request, and the slot's published range is st[i], la[i] (written before
 * the publication, read by a writer only after winning the slot). */
#define S_FREE  0	/* no owner thread */
#define S_IDLE  1	/* owned, nothing published */
#define S_PUB   2	/* T|PUB: a fast reader of the tree has published here */
#define S_MAT   3	/* T|MAT: a revoker won the slot; the request is (being)
			   materialised into the tree as a held reader */
#define S_PUBO  4	/* T|PUB|ORPHAN: the owner thread exited (-DORPHAN) */
#define S_MATO  5	/* T|MAT|ORPHAN: likewise */
#define IS_PUB(v)  ((v) == S_PUB || (v) == S_PUBO)
#define IS_MAT(v)  ((v) == S_MAT || (v) == S_MATO)
/* the release's new state: IDLE, or FREE if ORPHAN */
#define RELEASED(v) (((v) == S_PUB || (v) == S_MAT) -> S_IDLE : S_FREE)
byte slot[N];         /* fast_slot.state */
bit  biased;          /* tree->flags & BIASED */
byte nwr;             /* tree->nr_writers: writer requests in the tree */
bit  fh[N];           /* ghost: request i returned held from the fast path
			   (held fast, or held through the tree after a
			   failed back-out), not yet unlocked */
#ifdef ORPHAN
bit  orphaned;        /* one thread exit per run (budget) */
#endif
byte matg;            /* ghost: k + 1 while a revoker has won slot k and
			   not yet inserted its request (tree_lock held) */
#ifdef PROBE_STALE
byte fstale[N];       /* probe: 1: request i saw the bias clear after
			   publishing; 2: and a revocation began since */
#endif
#endif

/* part of the counting invariant: a decrement never finds a zero count */
#ifndef NO_INVARIANT
#define ASSERT_COUNTED(w)  assert(COUNT(w) >= 1)
#else
#define ASSERT_COUNTED(w)  skip
#endif

/* rule 6: may the waiter's bound have expired?  Safety: at any time.
 * LIVENESS: once the clock process says so (weak fairness makes it). */
#ifdef MUT_NO_HANDOFF
#define CAN_MARK       0	/* mutant: the waiter never marks itself */
#define ELSE_LOOK      true
#elif defined(LIVENESS)
#define CAN_MARK       (!FIFO_TREE && !marked[i] && expired[i])
#define ELSE_LOOK      !CAN_MARK
#else
#define CAN_MARK       (!FIFO_TREE && !marked[i])
#define ELSE_LOOK      true
#endif

/* tree_lock(): take the internal lock; a fast holder is displaced and
 * materialised: inserted as a held request, first in arrival order (the
 * tree was empty), word 0. */
inline materialise()
{
	d_step {
		if
		:: tw >= TW_FAST(0, 0) ->
			hk = (tw - TW_FAST(0, 0)) / 2;
			assert(nreq == 0 && !intree[hk]);
			rd[hk] = (tw - TW_FAST(0, 0)) % 2;
			seq[hk] = 0; nreq = 1; intree[hk] = 1; word[hk] = 0;
#ifdef FASTREAD
#ifndef NO_INVARIANT
			assert(!biased);	/* word 0 was never allowed */
#endif
			nwr = (rd[hk] -> 0 : 1);
#endif
			hk = 0
		:: else
		fi;
		tw = TW_LOCKED
	}
}

/* tree_unlock() (FASTREAD: never 0 while BIASED, so that the lock-word
 * fast path of a lone writer is closed while fast readers may hold) */
#if defined(FASTREAD) && !defined(MUT_BIASED_WORD_ZERO)
#define TREE_UNLOCK  tw = ((nreq > 0 || biased) -> TW_NONEMPTY : TW_FREE)
#else
#define TREE_UNLOCK  tw = (nreq > 0 -> TW_NONEMPTY : TW_FREE)
#endif

#ifdef ASYNC
#define NOT_ASYNC  && !asy	/* an asynchronous request is no trylock */
#else
#define NOT_ASYNC
#endif

#ifdef FASTREAD
#define NOT_FSLOT  && !fslot
#else
#define NOT_FSLOT
#endif

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

/* The invariant of the policy, whenever tree_lock is free:
 *   count(R) = #{Q in tree: Q.seq < R.seq, Q intersects R, Q, R conflict}
 * (seq: the precedence order), tree->nr_waiting = #{R in tree: count > 0},
 * the word states (held 0; ELIGIBLE S, default policy only; HANDOFF only
 * with count > 0, default policy only), and two held requests (word 0)
 * never conflict. */
inline check_inv()
{
#ifndef NO_INVARIANT
	d_step {
		hk = 0; hm = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] && COUNT(word[hk]) > 0 -> hm++
			:: else
			fi;
			hk++
		:: else -> break
		od;
		assert(hm == nwait);
#ifdef FASTREAD
		/* nr_requests and nr_writers count the tree; BIASED => no
		 * writer in the tree */
		hk = 0; hm = 0; hc = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] -> hm++;
				if
				:: !rd[hk] -> hc++
				:: else
				fi
			:: else
			fi;
			hk++
		:: else -> break
		od;
		assert(hm == nreq && hc == nwr && (!biased || nwr == 0));
#endif
		hk = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] ->
				assert(COUNT(word[hk]) > 0 || word[hk] == 0 ||
				       (!FIFO_TREE && word[hk] == SLEEPING));
				assert(!(word[hk] & HANDOFF) ||
				       (!FIFO_TREE && COUNT(word[hk]) > 0));
				hc = 0; hm = 0;
				do
				:: hm < N ->
					if
					:: hm != hk && intree[hm] &&
					   INTERSECTS(hm, hk) && CONFLICT(rd[hm], rd[hk]) ->
						assert(word[hm] != 0 || word[hk] != 0);
						if
						:: seq[hm] < seq[hk] -> hc++
						:: else
						fi
					:: else
					fi;
					hm++
				:: else -> break
				od;
				assert(COUNT(word[hk]) == hc)
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

/* Request k is granted (its word becomes 0, or it enters held).
 * Bounded overtaking: no request that entered the tree while request m was
 * marked, and conflicts with it, is granted while m still waits.
 * Precedence (FIFO: arrival order): no request with a lower seq that
 * intersects and conflicts is still in the tree. */
inline granted(k)
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			assert(!(late[hk] & (1 << k)));
#ifndef NO_INVARIANT
			assert(!(hk != k && intree[hk] && seq[hk] < seq[k] &&
				 INTERSECTS(hk, k) && CONFLICT(rd[hk], rd[k])));
#endif
			hk++
		:: else -> break
		od;
		hk = 0;
		marked[k] = 0; late[k] = 0
	}
}

#ifdef FASTREAD
/* materialise(): the revoker won slot k (or, mutant MUT_MAT_NO_CAS, did
 * not): insert request k, read from the slot, as a HELD reader with the
 * next seqnum.  The tree has no writer (BIASED was set): nobody's count
 * changes, nobody waits. */
inline materialise_slot(k)
{
	atomic {
		assert(!intree[k] && nwr == 0 && nwait == 0);
#ifdef PROBE_STALE
		/* probe: a stale publication, found by a LATER revocation */
		assert(fstale[k] != 2);
#endif
		rd[k] = 1; seq[k] = nreq; nreq++; intree[k] = 1; word[k] = 0;
		matg = 0;
		granted(k)
	}
}

/* A fast reader is held (it saw BIASED after publishing): precedence, no
 * writer ahead of it: none in the tree, none holding the lock word. */
inline fast_granted()
{
#ifndef NO_INVARIANT
	assert(nwr == 0 && (tw < TW_FAST(0, 0) || (tw - TW_FAST(0, 0)) % 2 == 1));
#else
	skip
#endif
}
#endif

/* Request i enters the tree: note it in late[m] of each marked request m
 * it conflicts with (ghost). */
inline note_entry()
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: marked[hk] && hk != i && intree[hk] &&
			   INTERSECTS(i, hk) && CONFLICT(isr, rd[hk]) ->
				late[hk] = late[hk] | (1 << i)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

/* count_blockers(): cnt = the requests in the tree that request i must
 * wait for; ovt: rule 2, a default tree where all of them are unmarked
 * waiters (none held, none marked): i may overtake them. */
inline count_blockers()
{
	d_step {
		cnt = 0; ovt = !FIFO_TREE; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   COUNTS(isr, rd[hk]) ->
				cnt++;
				if
				:: NO_PASSING(word[hk]) -> ovt = 0
				:: else
				fi
			:: else
			fi;
			hk++
		:: else -> break
		od;
		if
		:: cnt == 0 -> ovt = 0
		:: else
		fi;
		hk = 0
	}
}

/* overtake, rule 2, the ranks: seq = (min seq of the passed) - 1, i.e. the
 * rank of the first passed request, the others move up one. */
inline overtake_seq()
{
	d_step {
		hm = N; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   COUNTS(isr, rd[hk]) && seq[hk] < hm -> hm = seq[hk]
			:: else
			fi;
			hk++
		:: else -> break
		od;
#ifndef MUT_OVERTAKE_MAX_SEQ
		hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && seq[hk] >= hm -> seq[hk]++
			:: else
			fi;
			hk++
		:: else -> break
		od;
		seq[i] = hm;
#else
		seq[i] = nreq;	/* mutant: a fresh max seq */
#endif
		hk = 0; hm = 0
	}
}

/* overtake, rule 2: one blocker more on a passed waiter (atomic add; the
 * waiter may toggle SLEEPING meanwhile).  An ELIGIBLE one is counted
 * again: nr_waiting++. */
inline add_blocker(k)
{
#ifndef MUT_OVERTAKE_NO_BLOCKER
	atomic {
		old = word[k];
		assert(old != 0);	/* never a write to a held request */
#ifndef MUT_OVERTAKE_NO_NWAIT
		if
		:: COUNT(old) == 0 -> nwait++
		:: else
		fi;
#endif
		word[k] = old + ONE_BLOCKER;
		old = 0
	}
#else
	skip	/* mutant: the passed waiter is not told */
#endif
}

/* put_blocker(), rule 4: a CAS loop (one successful CAS here).  Old count
 * 2 with SLEEPING: next in line and asleep, wake it early (to spin).  Old
 * count 1: FIFO tree, HANDOFF, or not SLEEPING: the grant, word 0; else
 * (default tree, unmarked, asleep) ELIGIBLE, word S; nr_waiting--, wake it
 * if it sleeps.  Wakes go on the wake list, flushed after tree_unlock(). */
inline put_blocker(k)
{
#ifdef MUT_WAKE_BEFORE_GRANT
	/* mutant: rl_wake_one() first (decided on a load), then the grant */
	atomic {
		old = word[k];
		if
		:: COUNT(old) == 1 && (old & SLEEPING) -> fblocked[k] = 0
		:: else
		fi
	};
#endif
	atomic {
		old = word[k];
		ASSERT_COUNTED(old);
		assert(old != 0);	/* never a write to a held request */
		if
		:: COUNT(old) > 1 -> word[k] = old - ONE_BLOCKER
		:: COUNT(old) == 1 && GRANTS(old) -> word[k] = 0
		:: else -> word[k] = SLEEPING
		fi
#ifdef MUT_WAKE_BEFORE_GRANT
		;
		if
		:: COUNT(old) == 1 -> old = old & ~SLEEPING
		:: else
		fi
#endif
	};
	if
	:: COUNT(old) == 2 && (old & SLEEPING) -> wl = wl | (1 << k)
	:: COUNT(old) == 1 ->
		nwait--;
		if
		:: word[k] == 0 -> granted(k)
		:: else
		fi;
#ifdef ASYNC
		if
		:: word[k] == 0 && aq[k] ->	/* async_granted() */
			assert(!(old & SLEEPING));
			aq[k] = 0;
#ifndef MUT_ASYNC_COMPLETE_NEVER
			aql = aql | (1 << k)
#endif
		:: else
		fi;
#endif
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
#ifdef FASTREAD
	nwr = nwr - (1 - rd[i]);	/* nr_writers-- for a writer */
#endif
	marked[i] = 0; late[i] = 0;	/* ghost: it no longer waits */
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
			late[hk] = late[hk] & ~(1 << i);
			hk++
		:: else -> break
		od;
		hk = 0;
		/* the request is off the tree: nobody but its owner reads it;
		 * normalise it to keep the state space small */
		seq[i] = 0; rd[i] = 0; word[i] = 0; st[i] = 0; la[i] = 0
	}
}

#ifdef ASYNC
/* A completion runs for request k: exactly once (owed: queued, not
 * withdrawn, not run yet), only after its grant (held: word 0, in the
 * tree); the submitter is told (comp). */
inline run_completion(k)
{
	assert(aw[k] && intree[k] && word[k] == 0);
	aw[k] = 0; comp[k] = 1
}
#endif

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
	od;
#ifdef ASYNC
	/* rl_async_run(): the completions this thread's releases queued, in
	 * its own steps, after tree_unlock() */
	do
	:: aql == 0 -> break
	:: else ->
		atomic {
			if
			:: aql & 1 -> j = 0
			:: else -> if :: aql & 2 -> j = 1 :: else -> j = 2 fi
			fi;
			run_completion(j);
			aql = aql & ~(1 << j);
			j = 0
		}
	od
#endif
}

/* The caller's critical section begins: exclusion on the shadow; a thread
 * enters it only when its request's word is 0 (held <=> word == 0). */
inline shadow_enter()
{
	d_step {
		assert(word[i] == 0);
		waiting[i] = 0; expired[i] = 0;
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
 * ELIGIBLE (claim it); next in line and may spin; announce the sleep
 * (CAS); or sleep. */
#define SPINS(v)  (COUNT(v) == 1 && may_spin)
#define LOOK								\
	if								\
	:: v == 0 -> shadow_enter(); goto owner				\
	:: v != 0 && COUNT(v) == 0 -> goto claim			\
	:: SPINS(v) -> goto spin					\
	:: COUNT(v) != 0 && !SPINS(v) && (v & SLEEPING) == 0 -> goto cas \
	:: COUNT(v) != 0 && !SPINS(v) && (v & SLEEPING) != 0 -> goto fwait \
	fi

/* a loop head where the waiter looks at its clock (rule 6): mark itself
 * once the hand-off bound has passed */
#define MARK_OR_LOOK							\
	if								\
	:: CAN_MARK -> goto mark					\
	:: ELSE_LOOK -> LOOK						\
	fi

proctype thread(byte i)
{
	bit  isr;	/* reader request */
	bit  fast;	/* held through the fast path (may be materialised) */
#ifdef FASTREAD
	bit  fslot;	/* the request remembers its slot (owner_tid has
			   SLOT_TAG): held fast, or through the tree after a
			   failed back-out */
#endif
	bit  may_spin;	/* wait_loop()'s may_spin */
	bit  ovt;	/* count_blockers(): may overtake */
	byte kind;	/* K_PLAIN .. K_KILL */
	byte cnt;	/* lock_common()'s blockers */
	byte v;		/* wait_loop()'s v */
	byte wl;	/* wake list, bit k = request k */
#ifdef ASYNC
	bit  asy;	/* this request is asynchronous */
	byte aql;	/* this thread's completion queue, bit k = request k */
#endif
	byte old, j;
#ifdef ROUNDS
	byte rounds;	/* requests made so far, less one */
#endif

start:
	atomic {
#ifdef TWO_THREADS
		/* thread 2 takes no part */
		if
		:: i == 2 -> goto stop
		:: else
		fi;
#endif
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
#ifdef ASYNC
		/* a lock call, or range_*_lock_async() */
		if
		:: asy = 1
		:: asy = 0
		fi;
#endif
#ifdef FASTREAD
		/* fast_read_acquire(), steps 1-3: BIASED (relaxed load); this
		 * thread's slot (claimed FREE -> IDLE the first time), not
		 * in use; the request and the range (st, la) are written.
		 * Or no slot is free (the table is full): the old path. */
		if
		:: isr && biased && slot[i] <= S_IDLE ->
			slot[i] = S_IDLE; goto fpub
		:: isr && biased
		:: else
		fi;
slow:		/* the old path (also after a successful back-out) */
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
		/* lock_common(): tree_lock(), count the blockers; overtake
		 * (rule 2), or insert (rule 1) */
		CS_BEGIN
#ifdef FASTREAD
			/* a writer entry (lock call or trylock) revokes:
			 * revoke_fast_readers(), step 1: clear BIASED
			 * (store + fence), then the scan, below */
			if
			:: !isr && biased ->
#ifndef MUT_SCAN_BEFORE_CLEAR
				biased = 0;
#endif
#ifdef PROBE_STALE
				fstale[0] = (fstale[0] -> 2 : 0);
				fstale[1] = (fstale[1] -> 2 : 0);
				fstale[2] = (fstale[2] -> 2 : 0);
#endif
				goto revoke
			:: else
			fi;
entry:			/* (the scan is over) */
#endif
			count_blockers();
			if
#ifndef NO_TRYLOCK
			:: cnt > 0 && !ovt NOT_ASYNC ->	/* trylock_common(): busy (rule 3) */
				cnt = 0; TREE_UNLOCK; goto leave
#endif
			:: true		/* a lock call, or a trylock that wins */
			fi;
			rd[i] = isr;
#ifdef FASTREAD
			assert(!intree[i]);	/* a request enters once */
			nwr = nwr + (1 - isr);
#endif
			note_entry();
			if
			:: ovt ->		/* overtake: held at once */
				overtake_seq();
				intree[i] = 1;
				word[i] = 0;
				j = 0;
				do
				:: j < N ->
					if
					:: j != i && intree[j] && INTERSECTS(i, j) &&
					   COUNTS(isr, rd[j]) -> add_blocker(j)
					:: else
					fi;
					j++
				:: else -> break
				od;
				j = 0; cnt = 0; ovt = 0
			:: else ->		/* insert_request(): max seq */
				seq[i] = nreq;
				intree[i] = 1;
				word[i] = cnt * ONE_BLOCKER
#ifdef ASYNC
				;
				if
				:: asy && cnt > 0 ->	/* queued asynchronously */
#ifndef MUT_ASYNC_NOT_MARKED
					word[i] = word[i] | (FIFO_TREE -> 0 : HANDOFF);
#endif
					marked[i] = 1;	/* ghost: nothing overtakes it */
					late[i] = 0;
					aq[i] = 1; aw[i] = 1
				:: else
				fi
#endif
			fi;
			nreq++;
			if
			:: cnt > 0 -> nwait++; waiting[i] = 1
			:: else -> granted(i)
			fi;
#ifdef FASTREAD
			/* maybe_bias(), the read slow path: the inhibit
			 * countdown reaches 0 (or not) when the rule allows */
			if
#ifndef MUT_BIAS_WITH_WRITER
			:: isr && !biased && nwr == 0 -> biased = 1
#else
			:: isr && !biased -> biased = 1		/* mutant */
#endif
			:: true
			fi;
#endif
			check_inv();
		CS_END;
		if
		:: cnt == 0 -> shadow_enter(); goto owner
		:: else
		fi;
#ifdef ASYNC
		if
		:: asy -> cnt = 0; goto async_q	/* returned -EINPROGRESS */
		:: else
		fi;
#endif
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
		:: (v & SLEEPING) == 0 -> v = word[i]; MARK_OR_LOOK /* spin_for_grant() */
		:: (v & SLEEPING) != 0 && word[i] == v ->
			v = v & ~SLEEPING; word[i] = v
		:: (v & SLEEPING) != 0 && word[i] != v ->	/* CAS failed */
			v = word[i]; may_spin = 1; MARK_OR_LOOK
		fi
	}
	/* spin_for_grant(): acquire loads; then v = load, look again (and
	 * at the clock) */
	atomic { v = word[i]; MARK_OR_LOOK }
cas:	/* CAS(word, v, v | SLEEPING), acquire: announce the sleep */
	atomic {
		if
		:: word[i] == v -> v = v | SLEEPING; word[i] = v
		:: word[i] != v -> v = word[i]; MARK_OR_LOOK	/* failed: look again */
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
	:: atomic { fblocked[i] && CAN_MARK ->	/* the hand-off bound */
			fblocked[i] = 0; goto waited }
	fi;
waited:	/* any other return: look again (and at the clock); next in line
	 * may spin again */
	if
	:: kind == K_KILL -> goto cancelled	/* pthread_testcancel() after */
	:: atomic { true -> may_spin = (kind != K_INTR); v = word[i];
			MARK_OR_LOOK }
	fi;

claim:	/* claim_eligible(), rule 5: under tree_lock, iff still ELIGIBLE */
	CS_BEGIN
		if
#ifndef MUT_CLAIM_NO_RECHECK
		:: word[i] == SLEEPING ->
#else
		:: true ->	/* mutant: no re-check */
#endif
			word[i] = 0;
			granted(i);
			check_inv();
			shadow_enter();
			TREE_UNLOCK;
			goto owner
		:: else ->	/* overtaken meanwhile: wait again */
			check_inv()
		fi;
	CS_END;
	/* (the clock is read here too: a waiter that is overtaken between
	 * every wake-up and its claim never sleeps long enough for a futex
	 * timeout) */
	atomic { may_spin = (kind != K_INTR); v = word[i]; MARK_OR_LOOK }

mark:	/* mark_handoff(), rule 6: the bound has passed */
	CS_BEGIN
		if
		:: word[i] == 0		/* granted meanwhile */
#ifndef MUT_MARK_ELIGIBLE
		:: word[i] == SLEEPING ->	/* ELIGIBLE: claim at once */
			word[i] = 0;
			granted(i)
		:: COUNT(word[i]) > 0 ->
#else
		:: word[i] != 0 ->	/* mutant: marks an ELIGIBLE one too */
#endif
			word[i] = word[i] | HANDOFF;
			marked[i] = 1;
			late[i] = 0
		fi;
		check_inv();
		if
		:: word[i] == 0 ->
			shadow_enter();
			TREE_UNLOCK;
			goto owner
		:: else
		fi;
	CS_END;
	atomic { v = word[i]; LOOK }

give_up:	/* withdraw_request(GIVE_UP_SIGNAL / GIVE_UP_TIMEOUT), rule 7 */
	CS_BEGIN
		if
		:: COUNT(word[i]) == 0 ->	/* granted, or ELIGIBLE: keep it */
#ifndef MUT_GIVEUP_KEEPS_ELIGIBLE
			if
			:: word[i] != 0 ->	/* ELIGIBLE: claim */
				word[i] = 0;
				granted(i)
			:: else
			fi;
#endif
			check_inv();
			shadow_enter();
			TREE_UNLOCK;
			goto owner
		:: else ->
			nwait--;
			remove_request(W_GIVEUP);
			waiting[i] = 0; expired[i] = 0;
			check_inv()
		fi;
	CS_END;
	goto leave;

cancelled:	/* withdraw_on_cancel() -> withdraw_request(GIVE_UP_CANCEL) */
	CS_BEGIN
		if		/* granted, ELIGIBLE or not: leave the tree */
		:: COUNT(word[i]) != 0 -> nwait--
		:: else
		fi;
		remove_request(W_GIVEUP);
		waiting[i] = 0; expired[i] = 0;
		check_inv();
	CS_END;
	goto leave;

#ifdef ASYNC
async_q:	/* queued: the caller's loop waits for the completion, or calls
		 * range_lock_async_cancel() */
	if
	:: atomic { comp[i] -> comp[i] = 0; shadow_enter(); goto owner }
	:: true
	fi;
	CS_BEGIN
		if
#ifndef MUT_ASYNC_CANCEL_GRANTED
		:: aq[i] ->		/* queued (tagged): withdraw */
#else
		:: aq[i] || aw[i] ->	/* mutant: granted ones too */
#endif
			if
			:: COUNT(word[i]) != 0 -> nwait--
			:: else
			fi;
			remove_request(W_GIVEUP);
			aq[i] = 0; aw[i] = 0;
			waiting[i] = 0; expired[i] = 0;
			check_inv();
			TREE_UNLOCK;
			goto leave
		:: else ->		/* -EALREADY: granted */
#ifdef MUT_ASYNC_COMPLETE_TWICE
			run_completion(i);	/* mutant: the cancel runs it too */
#endif
			check_inv()
		fi;
	CS_END;
	atomic { comp[i] -> comp[i] = 0; shadow_enter(); goto owner }
#endif

#ifdef FASTREAD
revoke:	/* revoke_fast_readers(), under tree_lock (BIASED was set, so no
	 * writer is in the tree), step 2: the scan, one slot per step:
	 * load the state; PUB: CAS(T|PUB -> T|MAT), then materialise(): read
	 * the slot (request, range), insert the request as a HELD reader with
	 * the next seqnum.  A failed CAS (backed out or released) skips. */
	j = 0;
scan:
	if
	:: atomic { j == N -> j = 0; goto scanned }
	:: atomic { j < N && !IS_PUB(slot[j]) -> j++; goto scan }
	:: atomic { j < N && IS_PUB(slot[j]) ->
#ifdef ORPHAN
			old = slot[j]	/* the load; the CAS is the next step */
		};
	atomic {
		if
		:: slot[j] == old
		:: else ->	/* the CAS failed */
			old = 0;
#ifdef MUT_SCAN_SKIPS_ORPHANED
			j++;	/* mutant (FASTREAD.md as written): skip */
#endif
			goto scan	/* look again: retry while published */
		fi;
#ifndef MUT_MAT_NO_CAS
		slot[j] = (old == S_PUB -> S_MAT : S_MATO);
#endif
		old = 0;
#else
			/* the load and CAS(T|PUB -> T|MAT) */
#ifndef MUT_MAT_NO_CAS
			slot[j] = S_MAT;
#else
			/* mutant: reads the request, the slot stays PUB */
#endif
#endif
			matg = j + 1
		}
	fi;
	materialise_slot(j);
	j++;
	goto scan;
scanned:
#ifdef MUT_SCAN_BEFORE_CLEAR
	biased = 0;	/* mutant: BIASED cleared after the scan */
#endif
	/* step 3: reset the countdown (not modelled: maybe_bias() chooses) */
	goto entry;

fpub:	/* fast_read_acquire(), step 4: PUBLISH, exchange(slot, T|PUB) */
	slot[i] = S_PUB;
	/* step 5: CHECK, load(BIASED) */
	atomic {
		if
#ifndef MUT_FAST_NO_RECHECK
		:: biased ->
#else
		:: true ->	/* mutant: it saw BIASED before publishing */
#endif
			/* step 6: held (fast) */
			fslot = 1; fh[i] = 1;
			fast_granted();
			shadow_enter();
			goto owner
		:: else
#ifdef PROBE_STALE
			; fstale[i] = 1
#endif
		fi
	}
	/* step 7: BACK OUT, CAS(slot, T|PUB -> IDLE) */
	atomic {
		if
		:: slot[i] == S_PUB ->	/* backed out: the old path */
			slot[i] = S_IDLE;
#ifdef PROBE_STALE
			fstale[i] = 0;
#endif
			goto slow
		:: else ->		/* a revoker won the slot */
			assert(slot[i] == S_MAT);
#ifdef MUT_BACKOUT_NOT_HELD
			goto slow	/* mutant: not held, enters again */
#else
			fslot = 1
#endif
		fi
	}
#ifndef MUT_BACKOUT_NO_WAIT
	/* tree_lock(); tree_unlock(): waits for the materialiser */
	CS_BEGIN
	CS_END;
#endif
	/* held through the tree: it is there */
	atomic {
		assert(slot[i] == S_MAT && intree[i] && word[i] == 0);
		fh[i] = 1; shadow_enter(); goto owner
	}
#endif

owner:	/* the lock call returned 0: the caller's critical section */
	if
	:: !isr ->	/* a writer may call range_downgrade_write() */
		CS_BEGIN	/* (materialises a fast hold: its own) */
			/* check_held() */
			assert(intree[i] && word[i] == 0 && !rd[i]);
			/* ghost: from here on a reader */
			shadow_leave(); isr = 1; shadow_enter();
			rd[i] = 1;
#ifdef FASTREAD
#ifndef NO_INVARIANT
			assert(!biased);	/* a writer is in the tree */
#endif
			nwr--;
#endif
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
#ifdef FASTREAD
#ifdef ORPHAN
	:: atomic { fslot && !orphaned && (slot[i] == S_PUB || slot[i] == S_MAT) ->
			/* the owner thread exits holding it (key destructor:
			 * add ORPHAN); another thread unlocks it later (this
			 * process, from here on) */
			slot[i] = (slot[i] == S_PUB -> S_PUBO : S_MATO);
			orphaned = 1; goto owner }
#endif
#ifndef MUT_RELEASE_IGNORES_MAT
	:: atomic { fslot && IS_PUB(slot[i]) ->
#else
	:: atomic { fslot ->	/* mutant: T|MAT too is "released" */
#endif
			/* fast_read_release(): CAS(slot, T|PUB -> IDLE) wins */
			/* (-DORPHAN: T|PUB|ORPHAN -> FREE) */
			shadow_leave(); slot[i] = RELEASED(slot[i]); fh[i] = 0;
			goto leave }
	:: CS_BEGIN_IF(fslot && !IS_PUB(slot[i]))
			/* the CAS failed (T|MAT): tree_lock(); CAS(slot, T|MAT
			 * -> IDLE, or T|MAT|ORPHAN -> FREE); unlock through the
			 * tree */
			assert(IS_MAT(slot[i]));
			d_step { slot[i] = RELEASED(slot[i]); fh[i] = 0 }
			/* check_held() */
			assert(intree[i] && word[i] == 0 && rd[i] == isr);
			shadow_leave();
			remove_request(W_UNLOCK);
			check_inv();
		CS_END;
		goto leave
#endif
	:: CS_BEGIN_IF(tw != TW_FAST(i, isr) NOT_FSLOT)	/* tree_fast_release() failed */
			/* range_{read,write}_unlock() -> unlock_common() */
			/* check_held() */
			assert(intree[i] && word[i] == 0 && rd[i] == isr);
			shadow_leave();
			remove_request(W_UNLOCK);
			check_inv();
		CS_END
	fi;
leave:
	wake_flush();
	skip;
	d_step {
#ifdef FASTREAD
		/* an unlocked or withdrawn request is in no tree and in no
		 * slot */
		assert(!intree[i] && slot[i] <= S_IDLE);
		fslot = 0;
#endif
		isr = 0; fast = 0; may_spin = 0; kind = 0; v = 0
#ifdef ASYNC
		; assert(aql == 0 && !aq[i] && !aw[i] && !comp[i]);
		asy = 0
#endif
	}
#ifdef ROUNDS
	if
	:: rounds + 1 < (i == 0 -> ROUNDS0 : ROUNDS) -> rounds++; goto start
	:: else -> goto stop
	fi;
#elif defined(ONE_VICTIM)
	/* thread 0 makes one request, the others loop for ever */
	if
	:: i == 0 -> goto stop
	:: else -> goto start
	fi;
#else
	goto start;
#endif
stop:
	skip
}

#if defined(LIVENESS) && !defined(FIFO)
/* The clock: the hand-off bound of each wait passes eventually.  Weak
 * fairness is per process: this one, enabled while a request waits with
 * its bound not yet passed, must run; it expires the bounds of all the
 * requests waiting at that moment (one transition: with one option per
 * request, the process could keep serving the others). */
active proctype clock()
{
	do
	:: d_step {
		(waiting[0] && !expired[0]) || (waiting[1] && !expired[1]) ||
		(waiting[2] && !expired[2]) ->
		expired[0] = waiting[0];
		expired[1] = waiting[1];
		expired[2] = waiting[2]
	   }
	od
}
#endif

#ifdef FASTREAD
/* The fast path's invariants, checked in every state (the guard blocks
 * until one is false: no extra interleavings):
 *  - a fast reader that returned held is published in its slot (and not in
 *    the tree), or held in the tree with its slot won (MAT), until its
 *    unlock -- or a revoker that won its slot is inserting it (matg; a
 *    reader whose back-out failed returns only once it is in the tree:
 *    asserted there);
 *  - a published request is not in the tree;
 *  - BIASED => no writer in the tree and the lock word is not 0. */
#define FAST_OK(k) \
	((!fh[k] || (IS_PUB(slot[k]) && !intree[k]) || \
	  (IS_MAT(slot[k]) && ((intree[k] && word[k] == 0) || matg == k + 1))) && \
	 (!IS_PUB(slot[k]) || !intree[k]))
#ifndef NO_INVARIANT
#define FAST_INV  (FAST_OK(0) && FAST_OK(1) && FAST_OK(2) && \
		   (!biased || (nwr == 0 && tw != TW_FREE)))
#else
#define FAST_INV  (FAST_OK(0) && FAST_OK(1) && FAST_OK(2))
#endif
active proctype fast_monitor()
{
end:	atomic { !FAST_INV -> assert(FAST_INV) }
}
#endif

init
{
	atomic {
#ifdef FASTREAD
		/* the tree may start biased (a reachable state: a slow reader
		 * re-biased it and left) */
		if
		:: skip
		:: biased = 1; tw = TW_NONEMPTY
		fi;
#endif
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
