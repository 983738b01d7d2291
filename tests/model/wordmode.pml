/* SPDX-License-Identifier: MIT */
/*
 * wordmode.pml -- a SPIN model of the "word mode" of a default-policy tree
 * (issue 23; the design's draft 3, docs/design.md section 11):
 * full-range requests that conflict with the lock word's fast holder wait
 * on the lock word itself (spin, then FUTEX_WAIT with a sleepers variant of
 * the fast value), and the tree side they meet: displacement and
 * materialisation of the word holder, the tree path of ex-word-waiters
 * (HANDOFF-marked if a displacer took their hand-off request), the hand-off
 * IN THE WORD (draft 3), the internal lock tree_lock as the
 * futex mutex it is (L, L|S, sleepers on the value 3), with ONE kernel
 * queue for both kinds of sleeper on the lock word.  docs/model.md ("Word
 * mode") explains it; the step numbers below are the design's.
 *
 * MODEL STEP -> DESIGN STEP -> src/ (docs/model.md has the full table)
 * ==================================
 * tw, TW_*, TW_FAST(k, r, s)   the lock word: 0, L, L|S, NE, P|5, P|7,
 *                              P|6, P|2 (s: sleepers variant)   tree_lock.h
 * TW_HO(k, r), TW_HANDED(k)    draft 3: k|1 / k|4 (k asks; the holder, a
 *                              writer / reader, is rbl[k] = k->rb_left),
 *                              k|0 (handed to k)                tree_lock.h
 * fq[], wake1(), wake_all()    the lock word's futex queue: 1 = asleep on 3
 *                              (tree_lock), 2 = asleep on a sleepers value
 *                              (word); FUTEX_WAKE(1) wakes ANY one sleeper
 *                              of either kind; FUTEX_WAKE(INT_MAX) all
 * start:                       fast CAS 0 -> P|5/7; else word waiter iff
 *                              WORD_WAITER (full range, plain or timed,
 *                              conflicting fast value), else tree path
 * wloop:                       one pass of word_wait() (word_mode.c):
 *                              asking: k|0 -> pick up CAS(k|0 -> k|6),
 *                              wake all (wpicked:); neither k|ho nor k|0
 *                              -> wcheck:; else: 0 -> take_free_word();
 *                              a holder value: past -> ask (rbl[i] = P,
 *                              CAS(P|c -> i|1 / i|4)), else CAS(plain ->
 *                              sleepers); another's hand-off value: only
 *                              sleep on it; tree mode -> leave; then
 *                              wnext(): the user deadline (ETIMEDOUT, or
 *                              wwithdraw: if asking) or sleep (the spin is
 *                              a pass that changes nothing: not modelled)
 * wsleep:                      word_sleep(): FUTEX_WAIT(value): EAGAIN,
 *                              or asleep until woken or (tmo) its timeout;
 *                              bounded (bnd) until past the bound, then
 *                              unbounded (timed: the user deadline)
 * wwithdraw:                   timed asker: CAS(i|ho -> P|sleepers), wake
 *                              all, ETIMEDOUT; failed: look again
 * wcheck:                      asker whose value changed: tree_lock,
 *                              in_tree(): held (handed, materialised) or
 *                              the tree path, marked
 * wleave:, wtimeout:           "Leave": PASS-ON FUTEX_WAKE(1) if slept
 * tl_acquire()                 tree_lock_acquire(_slow): 0/NE -> mine;
 *                              fast value -> mine, materialise, wake all
 *                              if it was a sleepers variant; L -> L|S,
 *                              FUTEX_WAIT(3), mine = L|S
 * TL_RELEASE, tl_wake()        tree_lock_release(): exchange to NE/0 (0
 *                              only if the tree is empty), FUTEX_WAKE(1)
 *                              if the old value had S
 * tree:                        lock_common() under tree_lock: count,
 *                              overtake (rule 2) or insert (marked if mk)
 * twait:, tmark:, tgiveup:     the tree waiter (abstract: waits for word
 *                              == 0; rangelock.pml checks its protocol),
 *                              rule 6 mark, _timedlock give-up
 * owner:                       word unlock: CAS(P|plain -> 0), or
 *                              CAS(P|sleepers -> 0) + FUTEX_WAKE(1), or
 *                              (a hand-off request) CAS(X|ho -> X|0) +
 *                              FUTEX_WAKE(ALL), else (displaced) through
 *                              the tree (tree_fast_release_waited());
 *                              downgrade
 *
 * PROPERTIES: exclusion (shadow); the tree's counting invariant and word
 * states (check_inv); the lock word and the tree agree (monitor: tree
 * non-empty => tw in {L, L|S, NE}; a fast holder is not in the tree);
 * precision (a word sleeper sleeps only on a value whose holder conflicts
 * with it; at every grant, each word sleeper conflicts with some holder
 * unless a wake is still owed or in flight); bounded overtaking (ghost
 * marks: no request that arrived, or entered the tree, after a waiter was
 * marked and conflicts with it is granted before it; and once a hand-off
 * request is published (hoask), nobody else is granted anything until it
 * is granted, withdrawn or displaced); "believes it holds iff it holds"
 * (monitor: cs[k] => HOLDS(k); !HOLDS(i) wherever a waiter concludes it
 * does not hold; never inserted twice); every end of a hand-off wakes all
 * (monitor: a sleeper on a hand-off value that changed has a wake-all on
 * its way); the design's
 * no-lost-wake-up invariant (monitor: a futex sleeper exists only while
 * the word holds a sleepers indication, or a thread owes or is about to
 * make a wake); no invalid end state (a lost wake-up hangs a waiter whose
 * wait chose no timeout); -DLIVENESS: progress under weak fairness.
 *
 * MUTANTS (draft 3): MUT_GRANT_WAKE_ONE (the grant wakes one), MUT_
 * PICKUP_NO_WAKE, MUT_WITHDRAW_ZERO (the withdrawal writes 0; MUT_
 * WITHDRAW_PLAIN, P|plain, is an equivalent mutant: docs/model.md),
 * MUT_DISPLACE_ASKER (the displacer materialises X, not X->rb_left),
 * MUT_NO_INTREE_CHECK (a changed request is taken as displaced), MUT_HO_CAS
 * (other waiters CAS hand-off values like holder values), MUT_GRANT_ZERO
 * (the release writes 0 on a hand-off request).
 * MUTANTS (draft 1): MUT_NO_WAITERS_BIT (3d skipped: sleeps on the plain value),
 * MUT_NO_HANDOFF (never past the bound, never asks), MUT_PARTIAL_WAITS (a
 * partial-range request waits on the word), MUT_NO_PASS_ON (leave and
 * timeout without the pass-on wake), MUT_RELEASE_NONEMPTY (tree_unlock
 * writes 0 when no request WAITS, though held ones remain),
 * MUT_UNLOCK_NO_WAKE (CAS(P|sleepers -> 0) without the wake),
 * MUT_DISPLACE_NO_WAKE (the displacer does not wake all),
 * MUT_OVERTAKE_MARKED (a newcomer overtakes a marked waiter: shows that
 * the ghost marks of ex-word-waiters are live).
 *
 * PROBES (each must fail, to show the interleaving is reached):
 * PROBE_MIXED (both kinds of sleeper in the queue at once),
 * PROBE_CROSS_WAKE (a word unlock's FUTEX_WAKE(1) with a tree_lock sleeper
 * queued), PROBE_CROSS_WAKE2 (tree_lock's wake with a word sleeper queued),
 * PROBE_DISPLACE_ASK / PROBE_DISPLACE_HANDED (a displacer takes M|ho / M|0).
 *
 * DESIGN OPTIONS (draft 1 as written, each fails: docs/model.md):
 * -DREADER_WORD_WAITERS: full-range readers wait on the word too; without
 * it only full-range writers do (a reader facing a writer's word takes the
 * tree path).  -DSPLIT_STEP2: a failed step-2 CAS is followed by a fresh
 * load (without it, the pass goes on with the value the CAS returned).
 *
 * -DSTATS: thread 2 enables statistics (range_lock_tree_enable_stats():
 * tree_lock, so a displacement, then tree->stats set; word_blocks() is
 * false from then on); -DASKER_WORD_BLOCKS with it: draft 3's word_wait()
 * as written, whose asker also leaves when word_blocks() turns false
 * (fails: an asker handed and materialised meanwhile leaves for the tree
 * while it holds).  (The statistics' word_held() materialisation of a
 * new word holder is not modelled.)
 *
 * OTHER FLAGS: -DNUNITS=1|2, -DROUNDS=r (-DROUNDS0), -DTWO_THREADS,
 * -DPLAIN_ONLY (no timed calls; else thread 1 may be _timedlock,
 * -DALL_TIMED any thread), -DNO_DOWNGRADE, -DNO_TREE_MARK (only ex-word-
 * waiters are marked), -DNO_INVARIANT, -DNO_WAKE_INV (drop the tree and
 * the lost-wake-up invariants, to see which behaviour catches a mutant),
 * -DATOMIC_CS (tree_lock sections as one step; implied by -DLIVENESS),
 * -DLIVENESS (clock process, progress claim; pan -a -f).
 */

#ifndef NUNITS
#define NUNITS 2
#endif
#if defined(ROUNDS) && !defined(ROUNDS0)
#define ROUNDS0 ROUNDS
#endif
#define N 3

#define HANDOFF     2
#define ONE_BLOCKER 4
#define COUNT(w)    ((w) >> 2)

#define INTERSECTS(a, b)  (st[a] <= la[b] && st[b] <= la[a])
#define CONFLICT(ra, rb)  (!((ra) && (rb)))
#define FULL(k)           (st[k] == 0 && la[k] == NUNITS - 1)

/* the lock word */
#define TW_FREE      0
#define TW_LOCKED    1
#define TW_LS        3	/* L|S: tree_lock held, sleepers may exist */
#define TW_NONEMPTY  4
#define TW_FAST(k, r, s) (8 + 4 * (k) + 2 * (r) + (s))
/* draft 3: hand-off values (waiter k's pointer with a code) */
#define TW_HANDED(k) (20 + 3 * (k))		/* k|0: handed to k */
#define TW_HO(k, r)  (20 + 3 * (k) + 1 + (r))	/* k|1 (r = 0), k|4 (r = 1) */
#define IS_FAST(w)   ((w) >= 8)			/* tl_is_fast() */
#define IS_HV(w)     ((w) >= 8 && (w) < 20)	/* a holder's value */
#define IN_HO(w)     ((w) >= 20)		/* tl_in_handoff() */
#define IS_ASK(w)    (IN_HO(w) && ((w) - 20) % 3 != 0)	/* tl_is_handoff() */
#define AK(w)        (((w) - 20) / 3)		/* the waiter named */
#define AR(w)        (((w) - 20) % 3 - 1)	/* HO: the holder reads */
#define FK(w)        (((w) - 8) / 4)
#define FR(w)        ((((w) - 8) / 2) % 2)
#define FS(w)        (((w) - 8) % 2)
/* the holder a fast value stands for, and its mode */
#define HOLDER(w)    (IS_HV(w) -> FK(w) : (IS_ASK(w) -> rbl[AK(w)] : AK(w)))
#define HMODE(w)     (IS_HV(w) -> FR(w) : (IS_ASK(w) -> AR(w) : 0))
/* the displacer's reading of them (tree_lock() in protocol.h) */
#ifdef MUT_DISPLACE_ASKER
#define DHOLDER(w)   (IS_HV(w) -> FK(w) : AK(w))	/* mutant: X, not X->rb_left */
#define DMODE(w)     (IS_HV(w) -> FR(w) : 0)
#else
#define DHOLDER(w)   HOLDER(w)
#define DMODE(w)     HMODE(w)
#endif
/* does the holder of w conflict with request i (mode isr)? */
#define WCONF(w)     (INTERSECTS(HOLDER(w), i) && CONFLICT(HMODE(w), isr))
/* a sleepers indication (whoever ends the value wakes) */
#define SLEEPERS_IND(w) ((w) == TW_LS || (IS_HV(w) && FS(w)) || IN_HO(w))
/* tl_fast_sleepers(): a displacer of this value wakes all */
#define WAKES_ALL(w) (IS_FAST(w) && !(IS_HV(w) && !FS(w)))

/* how the call waits */
#define K_PLAIN 0
#define K_TIMED 1

/* who may wait on the word (design: "Who may wait on the word") */
#ifdef MUT_PARTIAL_WAITS
#define RANGE_OK  true		/* mutant: any range */
#else
#define RANGE_OK  FULL(i)
#endif
#ifdef READER_WORD_WAITERS
#define MODE_OK   true
#else
#define MODE_OK   (!isr)
#endif
#define WORD_WAITER (RANGE_OK && MODE_OK && IS_FAST(tw) && WCONF(tw) && !stats)

/* ---- shared state --------------------------------------------------- */
byte tw;
bit  intree[N];
bit  rd[N];           /* the request's mode (RL_READER; set at the call) */
byte st[N], la[N];
byte seq[N];
byte nreq;
byte nwait;
byte word[N];         /* wait word: count << 2 | HANDOFF (abstract) */
byte fq[N];           /* futex queue of the lock word: 0 awake, 1 asleep on
			 3 (tree_lock), 2 asleep on a word sleepers value */
bit  cs[N];            /* ghost: believes it holds (critical section) */
byte rbl[N];          /* an asking waiter's rb_left: the holder it names */
byte wv[N];           /* the word value a word waiter acts on / sleeps on */
byte hoask;           /* ghost: the published hand-off request (N: none) */
bit  stats;           /* -DSTATS: tree->stats set (word_blocks() false) */
bit  owe[N];          /* ghost: woken (or returned from a wait) and not yet
			 discharged: pessimistic acquire, sleep again with
			 the indication, or pass-on wake */
byte pw[N];           /* ghost: about to make a wake it decided on (1: one,
			 2: all) */
bit  marked[N];
byte late[N];
bit  waiting[N];
bit  expired[N];      /* the waiter's hand-off bound has passed */
byte sr[NUNITS];
bit  sw[NUNITS];

hidden byte hk, hm, hc;

#ifndef NO_INVARIANT
#define ASSERT_COUNTED(w)  assert(COUNT(w) >= 1)
#else
#define ASSERT_COUNTED(w)  skip
#endif

#ifdef MUT_RELEASE_NONEMPTY
#define TL_NONEMPTY_NOW  (nwait > 0)	/* mutant: "nonempty" = someone waits */
#else
#define TL_NONEMPTY_NOW  (nreq > 0)
#endif

/* does thread k hold (in the word, or granted in the tree)? */
#define HOLDS(k) ((IS_HV(tw) && FK(tw) == (k)) || tw == TW_HANDED(k) || \
		  (IS_ASK(tw) && rbl[AK(tw)] == (k)) || \
		  (intree[k] && word[k] == 0))
/* only writers wait on the word, so only writers ask (READER_WORD_WAITERS:
 * readers never do) */
#define CAN_ASK  (!isr)
/* may a tree waiter mark itself now?  (-DNO_TREE_MARK: only an
 * ex-word-waiter past the bound is marked, at its insertion) */
#if defined(MUT_NO_HANDOFF) || defined(NO_TREE_MARK)
#define CAN_TMARK    false
#elif defined(LIVENESS)
#define CAN_TMARK    (!marked[i] && expired[i])
#else
#define CAN_TMARK    (!marked[i])
#endif
/* may a word sleeper's FUTEX_WAIT return without a wake (its timeout at
 * min(deadline, t0 + bound), or spuriously)? */
#ifdef LIVENESS
#define WTIMEOUT_OK  (bnd && expired[i])
#else
#define WTIMEOUT_OK  tmo
#endif

/* word_wait(): is the hand-off bound past at this pass? */
inline upd_past()
{
#if defined(MUT_NO_HANDOFF)
	skip
#elif defined(LIVENESS)
	if :: expired[i] -> past = 1 :: else fi
#else
	if :: past = 1 :: true fi
#endif
}

/* word_wait(), after the value's CASes: the user deadline, or sleep */
inline wnext()
{
	if
	:: kind == K_TIMED ->	/* the deadline passed */
		if
		:: asking -> goto wwithdraw
		:: else -> goto wtimeout
		fi
	:: true -> bnd = !past; goto wsleep
	fi
}

inline wake1()
{
	if
	:: fq[0] != 0 -> fq[0] = 0; owe[0] = 1
	:: fq[1] != 0 -> fq[1] = 0; owe[1] = 1
	:: fq[2] != 0 -> fq[2] = 0; owe[2] = 1
	:: else
	fi
}

inline wake_all()
{
	d_step {
		/* everyone asleep wakes: nobody owes a wake any more */
		fq[0] = 0; fq[1] = 0; fq[2] = 0;
		owe[0] = 0; owe[1] = 0; owe[2] = 0
	}
}

/* the displaced fast holder becomes a held request, first in the tree */
inline materialise()
{
	hk = DHOLDER(tw);
#ifndef NO_INVARIANT
	assert(nreq == 0 && !intree[hk]);	/* fast holders: empty tree */
#endif
	assert(rd[hk] == DMODE(tw));
	if :: IN_HO(tw) -> hoask = N :: else fi;	/* the hand-off ends */
#ifdef PROBE_DISPLACE_ASK
	assert(!IS_ASK(tw));	/* probe: a hand-off request is displaced */
#endif
#ifdef PROBE_DISPLACE_HANDED
	assert(!IN_HO(tw) || IS_ASK(tw));	/* probe: a handed value is */
#endif
	seq[hk] = 0; nreq = 1; intree[hk] = 1; word[hk] = 0;
	hk = 0
}

/* tree_lock_acquire() and its slow path (tree_lock.c), the spin omitted */
inline tl_acquire()
{
	mine = TW_LOCKED;
	do
	:: atomic { IS_FAST(tw) ->	/* displace the fast holder */
		disp = tw; materialise(); tw = mine;
		if :: mine == TW_LS -> owe[i] = 0 :: else fi;
#ifndef MUT_DISPLACE_NO_WAKE
		pw[i] = (WAKES_ALL(disp) -> 2 : 0);	/* it will wake all */
#endif
		break }
	:: atomic { (tw == TW_FREE || tw == TW_NONEMPTY) ->
		tw = mine;
		if :: mine == TW_LS -> owe[i] = 0 :: else fi;
		break }
	:: atomic { (tw == TW_LOCKED || tw == TW_LS) ->
		tw = TW_LS }		/* CAS(L -> L|S) (or S already set) */
		/* FUTEX_WAIT(3): asleep, or EAGAIN */
		atomic {
			if
			:: tw == TW_LS -> fq[i] = 1; owe[i] = 0
			:: else
			fi
		}
		(fq[i] == 0);	/* returned (a waker set owe[i]) */
		mine = TW_LS
	od;
	mine = 0;
	/* a displaced sleepers variant: FUTEX_WAKE(INT_MAX) */
	if
	:: WAKES_ALL(disp) ->
#ifndef MUT_DISPLACE_NO_WAKE
		atomic { wake_all(); pw[i] = 0; disp = 0 }
#else
		disp = 0
#endif
	:: else -> disp = 0
	fi
}

/* A critical section of tree_lock: TL_BEGIN ... TL_RELEASE }.
 * -DATOMIC_CS (implied by -DLIVENESS): the whole section is one atomic
 * step, as in rangelock.pml (nobody sees L, nobody sleeps on 3): the
 * progress check is about word mode, and the futex mutex tree_lock is
 * not starvation-free (a sleeper woken by each release can find it taken
 * again every time; weak fairness allows that cycle). */
#if defined(LIVENESS) && !defined(ATOMIC_CS)
#define ATOMIC_CS
#endif
#ifndef ATOMIC_CS
#define TL_BEGIN  tl_acquire(); atomic {
#else
#define TL_BEGIN  atomic { (tw != TW_LOCKED && tw != TW_LS) -> tl_take();
#endif
inline tl_take()
{
	if
	:: IS_FAST(tw) ->
		materialise();
#ifndef MUT_DISPLACE_NO_WAKE
		if :: WAKES_ALL(tw) -> wake_all() :: else fi;
#endif
		tw = TW_LOCKED
	:: else -> tw = TW_LOCKED
	fi
}

/* tree_lock_release(): the exchange; the wake is tl_wake() */
#define TL_RELEASE						\
	assert(tw == TW_LOCKED || tw == TW_LS);			\
	ws = (tw == TW_LS);					\
	tw = (TL_NONEMPTY_NOW -> TW_NONEMPTY : TW_FREE);	\
	pw[i] = ws

inline tl_wake()
{
	if
	:: ws -> atomic {
#ifdef PROBE_CROSS_WAKE2
			/* probe: tree_lock's wake may reach a word sleeper */
			assert(fq[0] != 2 && fq[1] != 2 && fq[2] != 2);
#endif
			wake1(); ws = 0; pw[i] = 0 }
	:: else
	fi
}

/* the tree's invariant, whenever tree_lock is free (rangelock.pml's,
 * without SLEEPING and ELIGIBLE) */
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
		hk = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] ->
				assert(!(word[hk] & HANDOFF) || COUNT(word[hk]) > 0);
				assert((word[hk] & 1) == 0);
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

/* request k is granted: bounded overtaking, precedence */
inline granted(k)
{
	d_step {
		/* once a hand-off request is published, nobody else gets it */
		assert(hoask == N || hoask == k);
		hoask = N;
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

/* request i arrives, or enters the tree: it is late for every marked
 * request it conflicts with */
inline note_late()
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: marked[hk] && hk != i && INTERSECTS(i, hk) &&
			   CONFLICT(isr, rd[hk]) ->
				late[hk] = late[hk] | (1 << i)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

inline count_blockers()
{
	d_step {
		cnt = 0; ovt = 1; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   CONFLICT(isr, rd[hk]) ->
				cnt++;
				if
#ifndef MUT_OVERTAKE_MARKED
				:: word[hk] == 0 || (word[hk] & HANDOFF) -> ovt = 0
#else
				:: word[hk] == 0 -> ovt = 0	/* mutant */
#endif
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

inline overtake_seq()
{
	d_step {
		hm = N; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   CONFLICT(isr, rd[hk]) && seq[hk] < hm -> hm = seq[hk]
			:: else
			fi;
			hk++
		:: else -> break
		od;
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
		hk = 0; hm = 0
	}
}

/* one blocker off request k (tree waiters are abstract: no SLEEPING, no
 * ELIGIBLE; the last blocker grants) */
inline put_blocker(k)
{
	ASSERT_COUNTED(word[k]);
	assert(word[k] != 0);
	if
	:: COUNT(word[k]) > 1 -> word[k] = word[k] - ONE_BLOCKER
	:: else ->
		word[k] = 0; nwait--;
		granted(k)
	fi
}

inline remove_request()
{
	intree[i] = 0;
	nreq--;
	marked[i] = 0; late[i] = 0;
	j = (nwait == 0 -> N : 0);
	do
	:: j < N ->
		if
		:: intree[j] && seq[j] > seq[i] && INTERSECTS(i, j) &&
		   CONFLICT(rd[i], rd[j]) -> put_blocker(j)
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
		seq[i] = 0; word[i] = 0
	}
}

/* precision at a grant: every word sleeper conflicts with some holder, or
 * a wake is still owed or in flight */
inline check_precision()
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: fq[hk] == 2 &&
			   !(owe[0] || owe[1] || owe[2] || pw[0] || pw[1] || pw[2]) ->
				hc = 0; hm = st[hk];
				do
				:: hm <= la[hk] ->
					if
					:: sw[hm] || (!rd[hk] && sr[hm] > 0) -> hc = 1
					:: else
					fi;
					hm++
				:: else -> break
				od;
				assert(hc)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0; hm = 0; hc = 0
	}
}

inline shadow_enter()
{
	d_step {
		assert(!intree[i] || word[i] == 0);
		waiting[i] = 0; expired[i] = 0;
		cs[i] = 1;
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
	};
	check_precision()
}

inline shadow_leave()
{
	d_step {
		cs[i] = 0;
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

proctype thread(byte i)
{
	bit  isr;	/* reader request */
	bit  fast;	/* held in the word (fast path or word waiter) */
	bit  slept;	/* the word waiter has slept (FUTEX_WAIT returned) */
	bit  mk;	/* enters the tree HANDOFF-marked (past the bound) */
	bit  ovt, ws, tmo, keep;
	bit  asking;	/* our hand-off request is published */
	bit  past;	/* past the hand-off bound (word_wait()'s past) */
	bit  bnd;	/* this sleep is bounded by the hand-off deadline */
	byte kind;
	byte mine;	/* tree_lock_acquire_slow()'s mine: L or L|S */
	byte disp;	/* the displaced fast value */
	byte cnt, j;
#ifdef ROUNDS
	byte rounds;
#endif

start:
	atomic {
#ifdef TWO_THREADS
		if
		:: i == 2 -> goto stop
		:: else
		fi;
#endif
#ifndef LIVENESS
		if
		:: true
		:: true -> goto stop
		fi;
#endif
#ifdef STATS
		/* thread 2 enables statistics: range_lock_tree_enable_stats()
		 * takes tree_lock (displacing the word) and sets tree->stats */
		if
		:: i == 2 -> goto enable
		:: else
		fi;
#endif
		if
		:: isr = 1
		:: isr = 0
		fi;
#if NUNITS == 1
		st[i] = 0; la[i] = 0;
#else
		if
		:: st[i] = 0; la[i] = 1
		:: st[i] = 0; la[i] = 0
		:: st[i] = 1; la[i] = 1
		fi;
#endif
		rd[i] = isr;
#if defined(PLAIN_ONLY)
		kind = K_PLAIN;
#elif defined(ALL_TIMED)
		if
		:: kind = K_PLAIN
		:: kind = K_TIMED
		fi;
#else
		if
		:: kind = K_PLAIN
		:: i == 1 -> kind = K_TIMED
		fi;
#endif
		note_late();	/* it arrives */
		/* the fast path: CAS(0 -> request | mode) */
		if
		:: tw == TW_FREE ->
			tw = TW_FAST(i, isr, 0); fast = 1;
			granted(i); shadow_enter(); goto owner
		:: else
		fi;
		waiting[i] = 1;
		if
		:: WORD_WAITER -> goto wloop
		:: else -> goto tree
		fi
	}

wloop:	/* word_wait(), one pass (src/word_mode.c); the load is folded into
	 * the pass's step: a failed CAS goes on with the value it returned */
	atomic {
		if
		:: asking && tw == TW_HANDED(i) ->	/* handed to us: pick up */
			tw = TW_FAST(i, 0, 1); fast = 1; asking = 0;
			owe[i] = 0;	/* the sleepers code: pessimistic */
#ifndef MUT_PICKUP_NO_WAKE
			pw[i] = 2;
#endif
			rbl[i] = 0; mk = 0;
			shadow_enter(); goto wpicked
		:: asking && tw != TW_HANDED(i) && tw != TW_HO(i, 0) &&
		   tw != TW_HO(i, 1) ->
			/* only a displacer changes our request or our handed
			 * value: tree_lock and in_tree() tell which it took */
#ifndef MUT_NO_INTREE_CHECK
			goto wcheck
#else
			asking = 0; rbl[i] = 0; goto wleave	/* mutant */
#endif
		:: asking && (tw == TW_HO(i, 0) || tw == TW_HO(i, 1)) ->
			wv[i] = tw;
#if defined(STATS) && defined(ASKER_WORD_BLOCKS)
			goto wblocks
#else
			wnext()
#endif
#ifndef SPLIT_STEP2
		/* take_free_word(): CAS(0 -> N|plain, or N|sleepers once
		 * slept), failure: go on with the value it returned */
		:: !asking && tw == TW_FREE ->
			tw = TW_FAST(i, isr, slept); fast = 1;
			owe[i] = 0;	/* slept: pessimistic, discharged */
			granted(i); shadow_enter(); goto owner
#else
		:: !asking && tw == TW_FREE -> goto wcas
#endif
		:: !asking && IS_HV(tw) && WCONF(tw) ->	/* a holder's value */
			upd_past();
			if
			:: past && CAN_ASK ->
				/* the hand-off request: rb_left = P, then
				 * CAS(P|c -> M|1 or M|4) */
				rbl[i] = FK(tw); tw = TW_HO(i, FR(tw));
				asking = 1; mk = 1; hoask = i
			:: else ->
#ifndef MUT_NO_WAITERS_BIT
				if	/* CAS(P|plain -> P|sleepers) */
				:: !FS(tw) -> tw = tw + 1
				:: else
				fi
#else
				skip
#endif
			fi;
			wv[i] = tw; wnext()
		:: !asking && IN_HO(tw) && WCONF(tw) ->	/* another's hand-off */
			upd_past();
#ifdef MUT_HO_CAS
			/* mutant: treated as a holder value of its pointer */
			if
			:: past && CAN_ASK ->
				rbl[i] = AK(tw); tw = TW_HO(i, HMODE(tw));
				asking = 1; mk = 1; hoask = i
			:: else -> tw = TW_FAST(AK(tw), HMODE(tw), 1)
			fi;
#endif
			wv[i] = tw; wnext()
		:: !asking && (!IS_FAST(tw) || !WCONF(tw) || stats) ->
			goto wleave	/* tree mode (or non-conflicting) */

		fi
	}
#if defined(STATS) && defined(ASKER_WORD_BLOCKS)
wblocks:	/* -DASKER_WORD_BLOCKS, word_wait() of draft 3 as written: v ==
		 * asking was loaded; then `if (!word_blocks(tree, v)) break;`
		 * reads tree->stats, its own step: set -> the tree path WITHOUT
		 * in_tree(), though a grant and a displacement may have come
		 * between (fails).  Default (the fix): an asker does not look at
		 * word_blocks(); a changed word takes it to wcheck:. */
	atomic {
		if
		:: stats -> asking = 0; rbl[i] = 0; goto wleave
		:: else -> wnext()
		fi
	}
#endif
#ifdef SPLIT_STEP2
wcas:	/* the CAS of step 2 after a load of 0; failed: pass again, with a
	 * fresh load (the value the CAS returned is ignored) */
	atomic {
		if
		:: tw == TW_FREE ->
			tw = TW_FAST(i, isr, slept); fast = 1;
			owe[i] = 0;
			granted(i); shadow_enter(); goto owner
		:: else -> goto wloop
		fi
	}
#endif
wsleep:	/* word_sleep(): FUTEX_WAIT(value), bounded by the hand-off deadline
	 * until past it (bnd), then unbounded (only the user deadline) */
	atomic {
		if
		:: tw == wv[i] ->
			/* precision: it sleeps only on a conflicting holder */
			assert(WCONF(wv[i]));
			fq[i] = 2;
			if :: SLEEPERS_IND(wv[i]) -> owe[i] = 0 :: else fi;
#ifndef LIVENESS
			if	/* will this wait time out (or return spuriously)? */
			:: tmo = 0
			:: bnd || kind == K_TIMED -> tmo = 1
			fi
#endif
		:: else ->	/* EAGAIN */
			slept = 1; wv[i] = 0; goto wloop
		fi
	}
	if
	:: atomic { fq[i] == 0 -> slept = 1; wv[i] = 0; tmo = 0; goto wloop }
	:: atomic { fq[i] != 0 && WTIMEOUT_OK ->
			fq[i] = 0; slept = 1; wv[i] = 0; tmo = 0; goto wloop }
	fi;

wpicked:	/* the pick-up's FUTEX_WAKE(INT_MAX) */
#ifndef MUT_PICKUP_NO_WAKE
	atomic { wake_all(); pw[i] = 0 };
#endif
	goto owner;

wwithdraw:	/* a timed asker's deadline: CAS(M|ho -> P|sleepers), wake all */
	atomic {
		if
		:: tw == TW_HO(i, 0) || tw == TW_HO(i, 1) ->
#if defined(MUT_WITHDRAW_ZERO)
			tw = TW_FREE;				/* mutant */
#elif defined(MUT_WITHDRAW_PLAIN)
			tw = TW_FAST(rbl[i], AR(tw), 0);	/* mutant */
#else
			tw = TW_FAST(rbl[i], AR(tw), 1);
#endif
			hoask = N; asking = 0; mk = 0; rbl[i] = 0;
			pw[i] = 2
		:: else -> goto wloop	/* handed, or displaced: look */
		fi
	}
	atomic { wake_all(); pw[i] = 0 };
	goto wtimeout;

wcheck:	/* the word changed under our request: tree_lock, in_tree() */
	TL_BEGIN
		keep = intree[i];
		assert(!keep || word[i] == 0);
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	asking = 0; rbl[i] = 0;
	if
	:: keep -> keep = 0; mk = 0; fast = 0;
		atomic { shadow_enter(); goto owner }	/* handed: held */
	:: else -> goto wleave	/* displaced: the tree path, marked (mk) */
	fi;

wleave:	/* leave for the tree (marked iff it asked); pass-on wake if slept */
	assert(!HOLDS(i));
#ifndef MUT_NO_PASS_ON
	if
	:: slept -> pw[i] = 1; atomic { wake1(); pw[i] = 0; owe[i] = 0 }
	:: else
	fi;
#else
	owe[i] = 0;
#endif
	slept = 0; past = 0;
	goto tree;

wtimeout:	/* -ETIMEDOUT (pass-on wake if slept) */
	assert(!HOLDS(i));
#ifndef MUT_NO_PASS_ON
	if
	:: slept -> pw[i] = 1; atomic { wake1(); pw[i] = 0; owe[i] = 0 }
	:: else
	fi;
#else
	owe[i] = 0;
#endif
	slept = 0; past = 0;
	waiting[i] = 0; expired[i] = 0;
	goto leave;

tree:	/* lock_common(): tree_lock, count, overtake or insert */
	TL_BEGIN

		assert(!intree[i]);	/* never inserted twice */
		count_blockers();
		note_late();
		if
		:: ovt ->
			overtake_seq();
			intree[i] = 1;
			word[i] = 0;
			j = 0;
			do
			:: j < N ->
				if
				:: j != i && intree[j] && INTERSECTS(i, j) &&
				   CONFLICT(isr, rd[j]) ->
					assert(word[j] != 0);
					if
					:: COUNT(word[j]) == 0 -> nwait++
					:: else
					fi;
					word[j] = word[j] + ONE_BLOCKER
				:: else
				fi;
				j++
			:: else -> break
			od;
			j = 0; cnt = 0; ovt = 0
		:: else ->
			seq[i] = nreq;
			intree[i] = 1;
			word[i] = cnt * ONE_BLOCKER;
			if	/* an ex-word-waiter past the bound: marked */
			:: mk && cnt > 0 ->
				word[i] = word[i] | HANDOFF;
				marked[i] = 1; late[i] = 0
			:: else
			fi
		fi;
		mk = 0;
		nreq++;
		if
		:: cnt > 0 -> nwait++
		:: else -> granted(i)
		fi;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	if
	:: cnt == 0 -> shadow_enter(); goto owner
	:: else -> cnt = 0
	fi;

twait:	/* the tree waiter (abstract) */
	if
	:: atomic { word[i] == 0 -> shadow_enter(); goto owner }
	:: kind == K_TIMED -> goto tgiveup	/* ETIMEDOUT racing a grant */
	:: CAN_TMARK -> goto tmark		/* rule 6 */
	fi;

tmark:
	TL_BEGIN

		if
		:: word[i] == 0 -> keep = 1	/* granted meanwhile */
		:: else ->
			word[i] = word[i] | HANDOFF;
			marked[i] = 1; late[i] = 0
		fi;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	if
	:: keep -> keep = 0; shadow_enter(); goto owner
	:: else -> goto twait
	fi;

tgiveup:	/* withdraw_request(GIVE_UP_TIMEOUT) */
	TL_BEGIN

		if
		:: word[i] == 0 -> keep = 1	/* the grant won: keep it */
		:: else ->
			nwait--;
			remove_request();
			waiting[i] = 0; expired[i] = 0
		fi;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	if
	:: keep -> keep = 0; shadow_enter(); goto owner
	:: else -> goto leave
	fi;

owner:
	if
#ifndef NO_DOWNGRADE
	:: !isr ->	/* range_downgrade_write(): through the tree */
		TL_BEGIN	/* (displaces its own word hold) */

			assert(intree[i] && word[i] == 0 && !rd[i]);
			shadow_leave(); isr = 1; rd[i] = 1; shadow_enter();
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
			TL_RELEASE
		}
		tl_wake();
		goto owner
#endif
	:: atomic { fast && tw == TW_FAST(i, isr, 0) ->	/* CAS(P|plain -> 0) */
			shadow_leave(); tw = TW_FREE; goto leave }
	:: atomic { fast && tw == TW_FAST(i, isr, 1) ->	/* CAS(P|sleepers -> 0) */
			shadow_leave(); tw = TW_FREE;
#ifndef MUT_UNLOCK_NO_WAKE
			pw[i] = 1
#endif
		}
#ifndef MUT_UNLOCK_NO_WAKE
		atomic {
#ifdef PROBE_CROSS_WAKE
			/* probe: the word's wake may reach a tree_lock sleeper */
			assert(fq[0] != 1 && fq[1] != 1 && fq[2] != 1);
#endif
			wake1(); pw[i] = 0
		};	/* FUTEX_WAKE(1) */
#endif
		goto leave
	:: atomic { fast && IS_ASK(tw) ->
			/* tree_fast_release_waited(): a hand-off request:
			 * CAS(X|ho -> X|0), the grant; then wake all */
			assert(rbl[AK(tw)] == i && AR(tw) == isr);
			shadow_leave();
			j = AK(tw);
#ifndef MUT_GRANT_ZERO
			tw = TW_HANDED(j); granted(j);
#else
			tw = TW_FREE;	/* mutant */
#endif
			j = 0;
#ifndef MUT_GRANT_WAKE_ONE
			pw[i] = 2
#else
			pw[i] = 1
#endif
		}
		atomic {
#ifndef MUT_GRANT_WAKE_ONE
			wake_all();
#else
			wake1();	/* mutant */
#endif
			pw[i] = 0
		};
		goto leave
	:: (!fast || (tw != TW_FAST(i, isr, 0) && tw != TW_FAST(i, isr, 1) &&
		      !IS_ASK(tw))) ->
		/* displaced, or held in the tree: unlock through the tree */
		TL_BEGIN

			assert(intree[i] && word[i] == 0 && rd[i] == isr);
			shadow_leave();
			remove_request();
			check_inv();
			TL_RELEASE
		}
		tl_wake()
	fi;
leave:
	skip;
	d_step {
		assert(!intree[i] && fq[i] == 0 && !owe[i] && !pw[i]);
		assert(!HOLDS(i) && !cs[i]);
		wv[i] = 0; rbl[i] = 0; asking = 0; past = 0; bnd = 0;
		isr = 0; fast = 0; slept = 0; mk = 0; kind = 0;
		mine = 0; keep = 0; tmo = 0; rd[i] = 0; st[i] = 0; la[i] = 0
	}
#ifdef ROUNDS
	if
	:: rounds + 1 < (i == 0 -> ROUNDS0 : ROUNDS) -> rounds++; goto start
	:: else -> goto stop
	fi;
#elif defined(ONE_VICTIM)
	if
	:: i == 0 -> goto stop
	:: else -> goto start
	fi;
#else
	goto start;
#endif
#ifdef STATS
enable:
	TL_BEGIN
		stats = 1;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
#endif
stop:
	skip
}

#ifdef LIVENESS
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

/* Checked in every state:
 *  - the lock word and the tree agree: a non-empty tree keeps the word in
 *    tree mode (L, L|S, NE), a fast holder is not in the tree;
 *  - the design's no-lost-wake-up invariant: while a thread sleeps on the
 *    lock word, the word holds a sleepers indication, or some thread owes a
 *    wake (it was woken or returned and has not discharged it) or is about
 *    to make one. */
#define WORD_OK  ((nreq == 0 || tw == TW_LOCKED || tw == TW_LS || \
		   tw == TW_NONEMPTY) && (!IS_FAST(tw) || !intree[HOLDER(tw)]))
/* believes it holds => holds */
#define BELIEF_OK ((!cs[0] || HOLDS(0)) && (!cs[1] || HOLDS(1)) && \
		   (!cs[2] || HOLDS(2)))
/* every end of a hand-off wakes all: a sleeper on a hand-off value that
 * has changed has a wake-all on its way */
#define PWA (pw[0] == 2 || pw[1] == 2 || pw[2] == 2)
#define HO_STALE(k) (fq[k] == 2 && IN_HO(wv[k]) && tw != wv[k])
#define HO_WAKE_OK (PWA || !(HO_STALE(0) || HO_STALE(1) || HO_STALE(2)))
#define ANY_SLEEPER (fq[0] != 0 || fq[1] != 0 || fq[2] != 0)
#define DEBT (owe[0] || owe[1] || owe[2] || pw[0] || pw[1] || pw[2])
#ifndef NO_WAKE_INV
#define WAKE_OK  ((!ANY_SLEEPER || SLEEPERS_IND(tw) || DEBT) && HO_WAKE_OK)
#else
#define WAKE_OK  true	/* (to see which behaviour catches a mutant) */
#endif
#ifndef NO_INVARIANT
#define MON_OK  (WORD_OK && WAKE_OK && BELIEF_OK)
#else
#define MON_OK  (WAKE_OK && BELIEF_OK)
#endif
#ifdef PROBE_MIXED
/* probe: both kinds of sleeper in the queue at once */
#undef MON_OK
#define MON_OK (!((fq[0] == 1 || fq[1] == 1 || fq[2] == 1) && \
		  (fq[0] == 2 || fq[1] == 2 || fq[2] == 2)))
#endif
active proctype monitor()
{
end:	atomic { !MON_OK ->
#if !defined(PROBE_MIXED)
		/* one assertion per property, so that the error names it */
#ifndef NO_INVARIANT
		assert(WORD_OK);
#endif
#ifndef NO_WAKE_INV
		assert(!ANY_SLEEPER || SLEEPERS_IND(tw) || DEBT);
		assert(HO_WAKE_OK);
#endif
		assert(BELIEF_OK);
#endif
		assert(MON_OK) }
}

init
{
	atomic {
		hoask = N;
		run thread(0);
		run thread(1);
		run thread(2)
	}
}

#ifdef LIVENESS
ltl progress {
	[] ((waiting[0] -> <> !waiting[0]) &&
	    (waiting[1] -> <> !waiting[1]) &&
	    (waiting[2] -> <> !waiting[2]))
}
#endif
