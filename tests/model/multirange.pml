/* SPDX-License-Identifier: MIT */
/*
 * multirange.pml -- a SPIN model of the tree protocol for several ranges in
 * one arrival (sets) and for growing and shrinking a held range, as the
 * design note "Several ranges in one arrival; grow and shrink of a held
 * range" states it, in the version the C code implements (the note's
 * "CHANGED 05:10": precedes() with the growth tie rule, a merge that keeps
 * the owner's seqnum and recounts, growths = the added parts).
 * docs/model.md, "Several ranges and growing", explains the model; the
 * design, src/protocol.[ch] and this file must change together.
 *
 * LEVEL.  The tree protocol under the internal lock: every critical section
 * of tree_lock is ONE atomic step (docs/model.md, "Atomicity").  A wait
 * word is reduced to (count, HANDOFF mark, ELIGIBLE): held <=> count 0 and
 * not ELIGIBLE.  Its futex / spin / sleep protocol is the one of a single
 * request, unchanged by this work and checked by rangelock.pml: here a
 * waiter simply sees its word (a guard).  put_blocker()'s last blocker
 * grants (FIFO, marked) or, default policy, grants or makes ELIGIBLE (a
 * free choice: spinning or asleep); the waiter claims an ELIGIBLE word under
 * tree_lock iff it is still ELIGIBLE; a default-policy waiter may mark a
 * word of its own once (HANDOFF) at any time; an overtaking entry adds one
 * blocker to each waiter it passes (an ELIGIBLE one is counted in
 * nr_waiting again).
 *
 * MODEL STEP -> DESIGN RULE -> src/ (names as in the design note)
 * ----------------------------------------------------------------------
 * set_enter()            a set is ONE arrival: one CS, one     lock_many_common(),
 *                        seqnum; overtakes only as a whole     scan_entry(),
 *                        (min - 1 of all members' conflicts)   overtake(),
 *                                                              insert_request()
 * swait:                 the set waits for every member        lock_many_common()
 *                        (claim / mark per member word)        -> wait_loop()
 * set_giveup()           timeout: all count 0: keep (claim);   lock_many_common()
 *                        else every member leaves, held ones   -> withdraw
 *                        included (release walk each)          (per member)
 * grow_enter()           growth E = the ADDED part ([c,a-1]    grow_enter()
 *                        or [b+1,d]), never meeting L; seq s;  (from
 *                        counts precedes(Q,E); +1 on every R   grow_common())
 *                        with precedes(E,R); count 0: merge
 *                        at once; try: busy -> nothing in
 * gwait:                 E waits like any waiter               wait_for_grants()
 * merge()                L keeps seq s; every conflicting R    grow_merge()
 *                        meeting [c,d] recounted: put_blocker
 *                        (before - after) times; E out;
 *                        L := [c,d]
 * grow give-up           granted/ELIGIBLE: keep (merge); else  withdraw_group()
 *                        E leaves through the release walk     remove_request()
 * shrink()               put_blocker on R in [a,b] \ [c,d]     shrink_request()
 *                        counting L; never waits               put_dropped()
 * remove_request()       release walk with precedes(leaver,R)  remove_request()
 * PREC(q, r)             the design's precedes()               precedes()
 * put_blocker(), add_blocker()  as rangelock.pml (abstracted)  put_blocker(),
 *                                                              overtake()
 * check_inv()            count(R) = #{Q: precedes(Q,R), ...}   rl_check_tree()
 * shadow_*(), incs[]     exclusion (per thread: siblings       (the caller)
 *                        are one owner)
 *
 * REQUESTS.  Thread t owns requests 3t and 3t+1 (the members of a set; a
 * single lock uses 3t) and 3t+2, its growth E (struct growth's part[0],
 * flagged RL_GROWTH_TAG); a single lock's 3t+1 is its second growth E2
 * (part[1], a grow on both sides).  A growth's L is always request 3t
 * (only single locks grow here: a set member growing into its sibling
 * waits for itself, a documented caller deadlock).  Seqnums are real
 * numbers (ties and "- 1" matter here), from 8 up; nothing wraps in these
 * runs (the design compares signed differences).
 *
 * CONFIGURATIONS (-D, see init): CFG_SETS (default), CFG_GROW, CFG_MIXED,
 * CFG_TIE (NUNITS=3, a request that grows twice), CFG_TWO (NUNITS=3, a grow
 * on both sides: two growths), CFG_TIE4 (4 threads, a tie from overtaking;
 * NUNITS=3: the overtaker grows twice).  -DNO_ORDER_CHECK: without the
 * ordering check.  -DFIFO: FIFO tree; else the default policy.
 *
 * PROPERTIES: exclusion (shadow, per thread); held pairs of different
 * threads never conflict; the counting invariant with precedes() and
 * nr_waiting and the word states, at the end of every critical section;
 * no pair counts each other; never a blocker added to / taken from a held
 * word, never a decrement of a zero count; a grow that gives up (or a
 * grow_try that fails) leaves L exactly as before (range, seq, mode,
 * held); shrink never waits (one step); no invalid end state (deadlock,
 * waiter stuck).
 *
 * MUTANTS (-DMUT_x; each must fail; docs/model.md says which property)
 *   SET_ONE_AT_A_TIME        members enter one CS each, own next seqnum
 *   SET_PARTIAL_OVERTAKE     members overtake individually
 *   GROWTH_AS_ARRIVAL        E takes a fresh max seq, counts every conflict
 *   GROWTH_IGNORES_LATER_HOLDERS  E counts only Q.seq < s
 *   NO_RECOUNT               merge without the recount (no put_blocker)
 *   MERGE_DECREMENTS_SEQ     merged L takes seq s - 1 (the first version)
 *   TIE_STRICT               precedes(Q, E) with a strict Q.seq < s (and
 *                            so precedes(E, R) with R.seq >= s)
 *   SHRINK_NO_PUT            shrink without put_blocker
 *   GROW_GIVEUP_NO_WALK      a growth that gives up leaves without its walk
 *   WALK_SEQ_ONLY            release walks test R.seq > leaver.seq
 */

#ifndef NUNITS
#define NUNITS 2
#endif

#if defined(CFG_TIE4)
#define NT 4
#else
#define NT 3
#endif
#define NR (3 * NT)

#ifdef FIFO
#define FIFO_TREE 1
#else
#define FIFO_TREE 0
#endif

/* wait kinds (bit masks in the per-thread configuration) */
#define K_PLAIN 1	/* blocking call: never gives up */
#define K_TIMED 2	/* _timed: the timeout may fire at any time */
#define K_TRY   4	/* _try: busy -> nothing inserted, returns 0 */
#define K_KILL  8	/* _killable: cancelled at any time while waiting;
			   a granted growth is released too */

/* after a single lock is held */
#define A_NONE   1
#define A_GROW   2
#define A_SHRINK 4
#define A_DOWNGRADE 8	/* a writer: range_downgrade_write() */

/* programs */
#define P_NONE 0
#define P_LOCK 1
#define P_SET  2

#define ANY 255

/* reachability probes (-DPROBE=n: pan must report the assertion, which
 * shows that the situation n is reached; docs/model.md lists them) */
#ifdef PROBE
#define REACHED(n) assert(PROBE != (n))
#else
#define REACHED(n) skip
#endif

/* ---- the tree --------------------------------------------------------- */
bit  in[NR];          /* request r is in the tree */
bit  rd[NR];          /* reader */
byte st[NR], la[NR];  /* [start, last] */
byte sq[NR];          /* seqnum */
byte cnt[NR];         /* the word's count (blockers) */
bit  ho[NR];          /* HANDOFF (default policy, count > 0 only) */
bit  el[NR];          /* ELIGIBLE: count 0, word S (default policy only) */
byte tseq = 8;        /* tree->seqnum: the next arrival's */
byte nwait;           /* tree->nr_waiting: requests in the tree, count > 0 */
bit  incs[NR];        /* ghost: the owner is in its critical section with r */
byte os[NT];          /* ghost: the seqnum thread t's request 3t entered with */

/* per-thread configuration, constant after init */
hidden byte prog[NT], wk[NT], fst[NT], fla[NT], fmd[NT], aft[NT], gk[NT], ng[NT];

hidden byte hq, hr, hc;   /* scratch, d_step only */

#define OWN(r)       ((r) / 3)
/* growths: 3t+2, and 3t+1 of a single lock (the second part) */
#define ISG(r)       ((r) % 3 == 2 || ((r) % 3 == 1 && prog[OWN(r)] == P_LOCK))
#define HELD(r)      (cnt[r] == 0 && !el[r])
#define ISECT(a, b)  (st[a] <= la[b] && st[b] <= la[a])
#define CONFL(a, b)  (!(rd[a] && rd[b]))
/* L and its growth E are never compared (L is always 3t here) */
#define LEPAIR(a, b) (OWN(a) == OWN(b) && (ISG(a) || ISG(b)))

/* precedes(Q, R): "R counts Q" (for an intersecting conflicting pair) */
#define PREC_NN(q, r)  (sq[q] < sq[r])
/* (src/protocol.h: a waiting plain request TIED with the owner's seqnum
 * is waited for by the growth; the pair's other order is the complement) */
#if defined(MUT_GROWTH_IGNORES_LATER_HOLDERS)
#define PREC_NG(q, r)  (sq[q] <= sq[r])				/* mutant */
#define PREC_GN(q, r)  (sq[r] > sq[q] && !HELD(r))
#elif defined(MUT_TIE_STRICT)
#define PREC_NG(q, r)  (sq[q] < sq[r] || HELD(q))			/* mutant */
#define PREC_GN(q, r)  (sq[r] >= sq[q] && !HELD(r))
#else
#define PREC_NG(q, r)  (sq[q] <= sq[r] || HELD(q))
#define PREC_GN(q, r)  (sq[r] > sq[q] && !HELD(r))
#endif
#define PREC_GG(q, r)  (HELD(q) || (!HELD(r) && (sq[q] < sq[r] || \
				(sq[q] == sq[r] && (q) < (r)))))
#define PREC(q, r) (ISG(q) -> (ISG(r) -> PREC_GG(q, r) : PREC_GN(q, r)) : \
			      (ISG(r) -> PREC_NG(q, r) : PREC_NN(q, r)))

/* R (in the tree) counts Q (in the tree) */
#define COUNTS(q, r) ((q) != (r) && in[q] && !LEPAIR(q, r) && ISECT(q, r) && \
		      CONFL(q, r) && PREC(q, r))

/* a release walk of leaver l reaches R */
#ifndef MUT_WALK_SEQ_ONLY
#define WALK(l, r) ((r) != (l) && in[r] && !LEPAIR(l, r) && ISECT(l, r) && \
		    CONFL(l, r) && PREC(l, r))
#else
#define WALK(l, r) ((r) != (l) && in[r] && !LEPAIR(l, r) && ISECT(l, r) && \
		    CONFL(l, r) && sq[r] > sq[l])			/* mutant */
#endif

/* The invariant, at the end of every critical section:
 *   count(R) = #{Q in tree: Q intersects R, conflict, precedes(Q, R)},
 *   nr_waiting = #{R in tree: count(R) > 0}, the word states, no pair
 *   counting each other, and two held requests of different threads never
 *   intersect and conflict (siblings of a set may). */
inline check_inv()
{
#ifndef NO_INVARIANT
	d_step {
		hq = 0; hc = 0;
		do
		:: hq < NR ->
			if
			:: in[hq] && cnt[hq] > 0 -> hc++
			:: else
			fi;
			hq++
		:: else -> break
		od;
		assert(hc == nwait);
		hr = 0;
		do
		:: hr < NR ->
			if
			:: in[hr] ->
				assert(!el[hr] || (cnt[hr] == 0 && !FIFO_TREE));
				assert(!ho[hr] || (cnt[hr] > 0 && !FIFO_TREE));
				hc = 0; hq = 0;
				do
				:: hq < NR ->
					if
					:: COUNTS(hq, hr) ->
						hc++;
						assert(!COUNTS(hr, hq))
					:: else
					fi;
					if
					:: hq != hr && in[hq] && OWN(hq) != OWN(hr) &&
					   ISECT(hq, hr) && CONFL(hq, hr) ->
						assert(!HELD(hq) || !HELD(hr))
					:: else
					fi;
					hq++
				:: else -> break
				od;
				assert(cnt[hr] == hc)
			:: else
			fi;
			hr++
		:: else -> break
		od;
		hq = 0; hr = 0; hc = 0
	}
#else
	skip
#endif
}

/* one blocker off R (rule 4); the last one: grant (FIFO, HANDOFF) or,
 * default policy, grant (spinning / awake) or ELIGIBLE (asleep) */
inline put_blocker(r)
{
	assert(cnt[r] >= 1 && !el[r]);
	cnt[r]--;
	if
	:: cnt[r] == 0 ->
		nwait--;
		if
		:: FIFO_TREE || ho[r] -> ho[r] = 0
		:: !FIFO_TREE && !ho[r]		/* granted */
		:: !FIFO_TREE && !ho[r] -> el[r] = 1
		fi
	:: else
	fi
}

/* one blocker more on R (an overtaker passes it; a growth enters): never
 * on a held word; an ELIGIBLE one counts in nr_waiting again */
inline add_blocker(r)
{
	assert(!HELD(r));
	if
	:: cnt[r] == 0 -> el[r] = 0; nwait++
	:: else
	fi;
	cnt[r]++
}

/* request r leaves the tree (unlock, give-up): the release walk, then it
 * is normalised (nobody but its owner reads it again) */
inline remove_request(r)
{
#ifndef MUT_GROW_GIVEUP_NO_WALK
	j = (nwait == 0 -> NR : 0);
#else
	j = ((nwait == 0 || ISG(r)) -> NR : 0);		/* mutant: growths */
#endif
	do
	:: j < NR ->
		if
		:: WALK(r, j) -> put_blocker(j)
		:: else
		fi;
		j++
	:: else -> break
	od;
	j = 0;
	in[r] = 0; rd[r] = 0; st[r] = 0; la[r] = 0; sq[r] = 0; cnt[r] = 0;
	ho[r] = 0; el[r] = 0
}

/* the caller's critical section with request r: exclusion against every
 * other thread's (a thread's own requests are one owner) */
inline shadow_check(r)
{
	d_step {
		assert(in[r] && HELD(r));
		hq = 0;
		do
		:: hq < NR ->
			assert(!(incs[hq] && OWN(hq) != OWN(r) && ISECT(hq, r) &&
				 CONFL(hq, r)));
			hq++
		:: else -> break
		od;
		hq = 0
	}
}

inline shadow_enter(r)
{
	shadow_check(r);
	incs[r] = 1
}

/* ---- the set entry: one critical section ------------------------------- */
/* members 3t .. 3t+n-1 (not in the tree yet, their modes and ranges set)
 * enter as one arrival, or (mutant SET_ONE_AT_A_TIME) members lo..hi only.
 * ok := 0 for a busy try (nothing inserted). */
inline set_enter(lo, hi)
{
	atomic {
		/* scan_entry() per member: conflicts, held or marked, min seq */
		d_step {
			k = lo;
			do
			:: k <= hi ->
				sc[k] = 0; smw[k] = FIFO_TREE; smn[k] = ANY;
				hq = 0;
				do
				:: hq < NR ->
					if
					:: in[hq] && ISECT(hq, 3 * t + k) &&
					   CONFL(hq, 3 * t + k) ->
						assert(OWN(hq) != t || ISG(hq) ||
						       (lo > 0 && hq == 3 * t));
						sc[k]++;
						if
						:: HELD(hq) || ho[hq] -> smw[k] = 1
						:: else
						fi;
						if
						:: sq[hq] < smn[k] -> smn[k] = sq[hq]
						:: else
						fi
					:: else
					fi;
					hq++
				:: else -> break
				od;
				hq = 0;
				k++
			:: else -> break
			od;
			/* the whole set: may it overtake, at which seq? */
			mw = 0; mn = ANY; tot = 0; k = lo;
			do
			:: k <= hi ->
				tot = tot + sc[k];
				if
				:: sc[k] > 0 && smw[k] -> mw = 1
				:: else
				fi;
				if
				:: smn[k] < mn -> mn = smn[k]
				:: else
				fi;
				k++
			:: else -> break
			od;
#ifdef MUT_SET_PARTIAL_OVERTAKE
			/* mutant: each member decides for itself */
			k = lo;
			do
			:: k <= hi ->
				ov[k] = (sc[k] > 0 && !smw[k]);
				k++
			:: else -> break
			od;
#else
			k = lo;
			do
			:: k <= hi ->
				ov[k] = (tot > 0 && !mw);
				smn[k] = mn;
				k++
			:: else -> break
			od;
#endif
			/* a try fails iff some member would wait */
			ok = 1; k = lo;
			do
			:: k <= hi ->
				if
				:: sc[k] > 0 && !ov[k] && kind == K_TRY -> ok = 0
				:: else
				fi;
				k++
			:: else -> break
			od;
			k = 0
		}
		if
		:: ok ->
			/* insert: overtakers take min - 1 and pass, the others
			 * share the next seqnum and count every conflict */
			fresh = 0;
			k = lo;
			do
			:: k <= hi ->
				if
				:: ov[k] ->
					if
					:: hi > lo -> REACHED(1)	/* a set overtakes */
					:: else
					fi;
					sq[3 * t + k] = smn[k] - 1;
					cnt[3 * t + k] = 0;
					j = 0;
					do
					:: j < NR ->
						if
						:: in[j] && ISECT(j, 3 * t + k) &&
						   CONFL(j, 3 * t + k) -> add_blocker(j)
						:: else
						fi;
						j++
					:: else -> break
					od;
					j = 0
				:: else ->
					sq[3 * t + k] = tseq; fresh = 1;
					cnt[3 * t + k] = sc[k];
					if
					:: sc[k] > 0 -> nwait++
					:: else
					fi
				fi;
				k++
			:: else -> break
			od;
			if
			:: fresh -> tseq++
			:: else
			fi;
			fresh = 0;
			k = lo;
			do
			:: k <= hi -> in[3 * t + k] = 1; k++
			:: else -> break
			od;
			k = 0;
			os[t] = sq[3 * t]
		:: else
		fi;
		d_step {
			k = 0;
			do
			:: k < 2 -> sc[k] = 0; smw[k] = 0; smn[k] = 0; ov[k] = 0; k++
			:: else -> break
			od;
			k = 0; mw = 0; mn = 0; tot = 0
		}
		check_inv()
	}
}

/* ---- grow: merge E into L ---------------------------------------------- */
/* grow_merge(), under tree_lock, E (g) held: L keeps its seqnum s; every
 * conflicting R meeting the new range [c,d] is recounted: before = [R meets
 * [a,b] and precedes(L,R)] + [R meets E and precedes(E,R)], after =
 * precedes(L,R); put_blocker (before - after) times (never the last one:
 * after is 1 whenever before is not 0); E leaves; L := [c,d] */
inline merge()
{
	assert(in[g] && HELD(g) && in[L] && HELD(L) && (np == 1 || (in[g2] && HELD(g2))));
#ifndef MUT_NO_RECOUNT
	j = 0;
	do
	:: j < NR ->
		if
		:: j != L && j != g && j != g2 && in[j] && CONFL(L, j) &&
		   st[j] <= d && c <= la[j] ->
			k = (ISECT(L, j) && PREC(L, j)) + (ISECT(g, j) && PREC(g, j)) +
			    (np == 2 && ISECT(g2, j) && PREC(g2, j));
			if
			:: k > 2 -> REACHED(10)	/* L and both growths */
			:: else
			fi;
			ok = PREC(L, j);	/* (precedes() reads no range) */
			assert(k >= ok);	/* grow_merge()'s rl_die() */
			do
			:: k > ok -> REACHED(6); put_blocker(j); k--
			:: else -> break
			od;
			k = 0; ok = 0
		:: else
		fi;
		j++
	:: else -> break
	od;
	j = 0;
#endif
	st[L] = c; la[L] = d;
#ifdef MUT_MERGE_DECREMENTS_SEQ
	sq[L] = sq[L] - 1;			/* mutant: the first version's s - 1 */
#endif
	in[g] = 0; rd[g] = 0; st[g] = 0; la[g] = 0; sq[g] = 0; cnt[g] = 0;
	ho[g] = 0; el[g] = 0;
	in[g2] = 0; rd[g2] = 0; st[g2] = 0; la[g2] = 0; sq[g2] = 0; cnt[g2] = 0;
	ho[g2] = 0; el[g2] = 0;
	/* the caller's critical section now covers [c,d] */
	shadow_check(L)
}

/* L is exactly as before the grow (give-up, failed try) */
#define L_AS_BEFORE (in[L] && HELD(L) && incs[L] && st[L] == sa && la[L] == sl && \
		     sq[L] == ss && rd[L] == sr && !in[g] && !in[g2])

proctype thread(byte t)
{
	byte n;          /* members of the set (1: a single lock) */
	byte kind;       /* K_* of the wait */
	byte L, g, g2;   /* the request that grows, its growths (g2: the
			    second part of a grow on both sides) */
	byte np;         /* the growths: 1 or 2 */
	byte c, d;       /* a target range */
	byte sa, sl, ss; /* L before a grow */
	bit  sr;
	byte cg, cg2;    /* the growths' counts at entry */
	byte grows;      /* grows done */
	bit  ok;
	bit  mk0, mk1, mkg, mkg2;   /* this wait has marked the word */
	byte j, k;
	/* set_enter() scratch */
	byte sc[2], smn[2];
	bit  smw[2], ov[2];
	bit  mw;
	byte mn, tot, fresh;

	L = 3 * t; g = 3 * t + 2; g2 = 3 * t + 1;
	if
	:: prog[t] == P_NONE -> goto done
	:: prog[t] == P_SET -> n = 2
	:: prog[t] == P_LOCK -> n = 1
	fi;

	/* the requests: modes and ranges */
	atomic {
		k = 0;
		do
		:: k < n ->
			if
			:: fmd[t] == ANY -> if :: rd[3 * t + k] = 1 :: rd[3 * t + k] = 0 fi
			:: else -> rd[3 * t + k] = fmd[t]
			fi;
			if
			:: n == 2 && fst[t] != ANY ->
				/* a set on units x = [0,0] and y = [1,1]: thread 0
				 * x then y, thread 1 y then x */
				st[3 * t + k] = (k == (t % 2) -> 0 : 1);
				la[3 * t + k] = st[3 * t + k]
			:: n == 1 && fst[t] != ANY ->
				st[L] = fst[t]; la[L] = fla[t]
			:: fst[t] == ANY ->
#if NUNITS == 2
				if
				:: st[3 * t + k] = 0; la[3 * t + k] = 0
				:: st[3 * t + k] = 0; la[3 * t + k] = 1
				:: st[3 * t + k] = 1; la[3 * t + k] = 1
				fi
#else
				if
				:: st[3 * t + k] = 0; la[3 * t + k] = 0
				:: st[3 * t + k] = 0; la[3 * t + k] = 1
				:: st[3 * t + k] = 0; la[3 * t + k] = 2
				:: st[3 * t + k] = 1; la[3 * t + k] = 1
				:: st[3 * t + k] = 1; la[3 * t + k] = 2
				:: st[3 * t + k] = 2; la[3 * t + k] = 2
				fi
#endif
			fi;
			k++
		:: else -> break
		od;
		k = 0;
		/* which call */
		if
		:: wk[t] & K_PLAIN -> kind = K_PLAIN
		:: wk[t] & K_TIMED -> kind = K_TIMED
		:: wk[t] & K_TRY -> kind = K_TRY
		fi
	}

	/* the entry: one arrival */
#ifndef MUT_SET_ONE_AT_A_TIME
	set_enter(0, n - 1);
#else
	/* mutant: one critical section and one seqnum per member */
	set_enter(0, 0);
	if
	:: n == 2 -> set_enter(1, 1)
	:: else
	fi;
#endif
	if
	:: !ok ->	/* a busy try: nothing inserted */
		d_step {
			assert(!in[L] && !in[L + 1]);
			rd[L] = 0; st[L] = 0; la[L] = 0; rd[L + 1] = 0; st[L + 1] = 0;
			la[L + 1] = 0; ok = 0; kind = 0
		}
		goto done
	:: else
	fi;

swait:	/* wait for every member: held, claim, mark, or give up */
	if
	:: atomic { HELD(L) && (n == 1 || HELD(L + 1)) ->
		shadow_enter(L);
		if
		:: n == 2 -> shadow_enter(L + 1)
		:: else
		fi;
		mk0 = 0; mk1 = 0
	   }
	:: atomic { el[L] -> el[L] = 0; check_inv() }; goto swait
	:: atomic { n == 2 && el[L + 1] -> el[L + 1] = 0; check_inv() }; goto swait
	:: atomic { !FIFO_TREE && !mk0 && cnt[L] > 0 -> ho[L] = 1; mk0 = 1; check_inv() };
		goto swait
	:: atomic { !FIFO_TREE && n == 2 && !mk1 && cnt[L + 1] > 0 ->
		ho[L + 1] = 1; mk1 = 1; check_inv() }; goto swait
	:: atomic { kind == K_TIMED && !(HELD(L) && (n == 1 || HELD(L + 1))) ->
		/* the timeout: every member granted or ELIGIBLE: keep them;
		 * else none: every member leaves, held ones included */
		mk0 = 0; mk1 = 0;
		if
		:: cnt[L] == 0 && (n == 1 || cnt[L + 1] == 0) ->
			el[L] = 0; el[L + 1] = 0;
			shadow_enter(L);
			if
			:: n == 2 -> shadow_enter(L + 1)
			:: else
			fi;
			ok = 1
		:: else ->
			if
			:: n == 2 && (HELD(L) || HELD(L + 1)) -> REACHED(2) /* held member given up */
			:: else
			fi;
			k = 0;
			do
			:: k < n ->
				if
				:: cnt[3 * t + k] > 0 -> nwait--
				:: else
				fi;
				remove_request(3 * t + k);
				k++
			:: else -> break
			od;
			k = 0; ok = 0
		fi;
		check_inv()
	   };
		if
		:: ok -> skip
		:: else -> goto done
		fi
	fi;

	/* held: the caller's critical section */
	kind = 0;
	if
	:: n == 2 -> goto unlock
	:: else
	fi;

after:	/* a single lock: grow, shrink, or nothing */
	if
	:: aft[t] & A_NONE -> goto unlock
	:: (aft[t] & A_GROW) && grows < ng[t] && (st[L] > 0 || la[L] < NUNITS - 1) ->
		goto grow
	:: (aft[t] & A_SHRINK) && st[L] < la[L] -> goto shrink
	:: (aft[t] & A_DOWNGRADE) && !rd[L] -> goto downgrade
	:: else -> goto unlock
	fi;

downgrade:	/* range_downgrade_write(): later readers that counted L lose it */
	atomic {
		assert(in[L] && HELD(L) && incs[L] && !rd[L]);
		j = (nwait == 0 -> NR : 0);
		do
		:: j < NR ->
			if
			:: WALK(L, j) && rd[j] -> REACHED(8); put_blocker(j)
			:: else
			fi;
			j++
		:: else -> break
		od;
		j = 0;
		rd[L] = 1;
		shadow_check(L);
		check_inv()
	}
	goto after;

grow:	/* range_lock_grow*(): a strict super-range [c,d] */
	atomic {
		/* the added parts (grow_enter()): [c, a-1] and/or [b+1, d],
		 * never meeting L */
		c = st[L]; d = la[L];
		if
		:: c > 0 -> c--
		:: d < NUNITS - 1 -> d++
		:: c > 0 && d < NUNITS - 1 -> c--; d++	/* two parts */
		fi;
		do
		:: c < st[L] && c > 0 -> c--
		:: d > la[L] && d < NUNITS - 1 -> d++
		:: true -> break
		od;
		if
		:: gk[t] & K_PLAIN -> kind = K_PLAIN
		:: gk[t] & K_TIMED -> kind = K_TIMED
		:: gk[t] & K_TRY -> kind = K_TRY
		:: gk[t] & K_KILL -> kind = K_KILL
		fi
	}
	/* the growths enter (one critical section) */
	atomic {
		assert(in[L] && HELD(L) && incs[L] && !in[g] && !in[g2]);
		sa = st[L]; sl = la[L]; ss = sq[L]; sr = rd[L];
		/* E = g (the first part), E2 = g2 (the second, a grow on both
		 * sides) */
		np = 1;
		if
		:: c < st[L] -> st[g] = c; la[g] = st[L] - 1;
			if
			:: d > la[L] -> np = 2; st[g2] = la[L] + 1; la[g2] = d
			:: else
			fi
		:: else -> st[g] = la[L] + 1; la[g] = d
		fi;
		rd[g] = rd[L];
		cnt[g] = 1;	/* (not held while it is being counted) */
#ifndef MUT_GROWTH_AS_ARRIVAL
		sq[g] = sq[L];
#else
		sq[g] = tseq; tseq++;		/* mutant: an arrival */
#endif
		if
		:: np == 2 -> rd[g2] = rd[L]; sq[g2] = sq[g]; cnt[g2] = 1
		:: else
		fi;
		d_step {
			/* each part's count: precedes(Q, part) */
			hc = 0; hq = 0;
			do
			:: hq < NR ->
				if
				:: COUNTS(hq, g) -> hc++
				:: else
				fi;
				hq++
			:: else -> break
			od;
			cg = hc; hc = 0; hq = 0;
			do
			:: np == 2 && hq < NR ->
				if
				:: COUNTS(hq, g2) -> hc++
				:: else
				fi;
				hq++
			:: else -> break
			od;
			cg2 = hc; hc = 0; hq = 0;
#if !defined(MUT_GROWTH_AS_ARRIVAL) && !defined(NO_ORDER_CHECK)
			/* the ordering rule: an added part takes the request's
			 * place, the one it entered with: it waits for the
			 * waiters not later than that, the later ones wait for
			 * it (checked at every grow, the second one too) */
			in[g] = 1; in[g2] = (np == 2);
			do
			:: hq < NR ->
				if
				:: in[hq] && !ISG(hq) && !HELD(hq) && OWN(hq) != t &&
				   ISECT(hq, g) && CONFL(hq, g) ->
					assert(COUNTS(hq, g) == (sq[hq] <= os[t]));
					assert(COUNTS(g, hq) == (sq[hq] > os[t]))
				:: else
				fi;
				if
				:: np == 2 && in[hq] && !ISG(hq) && !HELD(hq) &&
				   OWN(hq) != t && ISECT(hq, g2) && CONFL(hq, g2) ->
					assert(COUNTS(hq, g2) == (sq[hq] <= os[t]));
					assert(COUNTS(g2, hq) == (sq[hq] > os[t]))
				:: else
				fi;
				hq++
			:: else -> break
			od;
			in[g] = 0; in[g2] = 0; hq = 0
#endif
		}
		if
		:: kind == K_TRY && cg + cg2 > 0 ->	/* grow_try busy: nothing in */
			rd[g] = 0; st[g] = 0; la[g] = 0; sq[g] = 0; cnt[g] = 0;
			rd[g2] = 0; st[g2] = 0; la[g2] = 0; sq[g2] = 0; cnt[g2] = 0;
			ok = 0
		:: else ->
#ifndef MUT_GROWTH_AS_ARRIVAL
			/* every R with precedes(part, R) gets one blocker, part
			 * by part (the other part is not in the tree yet) */
			in[g] = 1;
			j = 0;
			do
			:: j < NR ->
				if
				:: COUNTS(g, j) -> add_blocker(j)
				:: else
				fi;
				j++
			:: else -> break
			od;
			in[g] = 0;
			j = 0;
			do
			:: np == 2 && j < NR ->
				if
				:: j != g && in[j] && !LEPAIR(g2, j) && ISECT(g2, j) &&
				   CONFL(g2, j) && PREC(g2, j) -> add_blocker(j)
				:: else
				fi;
				j++
			:: else -> break
			od;
			j = 0;
#endif
			/* insert_request() each */
			in[g] = 1; cnt[g] = cg;
			if
			:: cg > 0 -> nwait++
			:: else
			fi;
			if
			:: np == 2 -> in[g2] = 1; cnt[g2] = cg2;
				if
				:: cg2 > 0 -> nwait++
				:: else
				fi
			:: else
			fi;
			if
			:: cg + cg2 == 0 -> merge(); ok = 1	/* merged at once */
			:: else -> ok = 0
			fi
		fi;
		check_inv()
	}
	if
	:: ok -> goto grown
	:: !ok && kind == K_TRY ->
		assert(L_AS_BEFORE); goto grew
	:: else
	fi;
gwait:	/* the growths wait like any waiters (wait_for_grants()) */
	if
	:: atomic { in[g] && HELD(g) && (np == 1 || HELD(g2)) -> REACHED(3);
		merge(); check_inv() }; goto grown
	:: atomic { el[g] -> REACHED(4); el[g] = 0; check_inv() }; goto gwait
	:: atomic { np == 2 && el[g2] -> el[g2] = 0; check_inv() }; goto gwait
	:: atomic { !FIFO_TREE && !mkg && cnt[g] > 0 -> ho[g] = 1; mkg = 1; check_inv() };
		goto gwait
	:: atomic { !FIFO_TREE && np == 2 && !mkg2 && cnt[g2] > 0 -> ho[g2] = 1; mkg2 = 1;
		check_inv() }; goto gwait
	:: atomic { kind == K_TIMED && !(HELD(g) && (np == 1 || HELD(g2))) ->
		/* withdraw_group(): every part granted or ELIGIBLE: keep them
		 * (claimed; the merge follows); else every part leaves through
		 * the release walk, held ones included */
		if
		:: cnt[g] == 0 && (np == 1 || cnt[g2] == 0) ->
			el[g] = 0; el[g2] = 0; ok = 1
		:: else ->
			if
			:: nwait > 1 -> REACHED(5)	/* E leaves, others wait */
			:: else
			fi;
			if
			:: np == 2 && (HELD(g) || HELD(g2)) -> REACHED(9) /* a held part leaves */
			:: else
			fi;
			if
			:: cnt[g] > 0 -> nwait--
			:: else
			fi;
			remove_request(g);
			if
			:: np == 2 ->
				if
				:: cnt[g2] > 0 -> nwait--
				:: else
				fi;
				remove_request(g2)
			:: else
			fi;
			assert(L_AS_BEFORE);
			ok = 0
		fi;
		check_inv()
	   };
		if
		:: ok -> ok = 0; goto gwait
		:: else -> goto grew
		fi
	:: atomic { kind == K_KILL ->
		/* cancellation: every part leaves, granted or not (the walk);
		 * L keeps [a,b] */
		if
		:: cnt[g] > 0 -> nwait--
		:: else -> el[g] = 0
		fi;
		remove_request(g);
		if
		:: np == 2 ->
			if
			:: cnt[g2] > 0 -> nwait--
			:: else -> el[g2] = 0
			fi;
			remove_request(g2)
		:: else
		fi;
		assert(L_AS_BEFORE);
		ok = 0;
		check_inv()
	   };
		goto grew
	fi;
grown:	skip;
	d_step { assert(in[L] && HELD(L) && !in[g] && !in[g2] && st[L] == c && la[L] == d) };
grew:	skip;
	d_step { grows++; mkg = 0; mkg2 = 0; kind = 0; ok = 0; c = 0; d = 0; sa = 0; sl = 0;
		 ss = 0; sr = 0; cg = 0; cg2 = 0; np = 0 };
	goto after;

shrink:	/* range_lock_shrink(): a strict sub-range [c,d]; never waits */
	atomic {
		if
		:: c = st[L]; d = st[L]
		:: c = la[L]; d = la[L]
#if NUNITS == 3
		:: la[L] == st[L] + 2 -> c = st[L]; d = st[L] + 1
		:: la[L] == st[L] + 2 -> c = st[L] + 1; d = la[L]
		:: la[L] == st[L] + 2 -> c = st[L] + 1; d = st[L] + 1
#endif
		fi;
		assert(in[L] && HELD(L) && incs[L]);
#ifndef MUT_SHRINK_NO_PUT
		j = 0;
		do
		:: j < NR ->
			if
			:: j != L && in[j] && ISECT(L, j) && !(st[j] <= d && c <= la[j]) &&
			   CONFL(L, j) && PREC(L, j) -> REACHED(7); put_blocker(j)
			:: else
			fi;
			j++
		:: else -> break
		od;
		j = 0;
#endif
		st[L] = c; la[L] = d;
		c = 0; d = 0;
		check_inv()
	}
	goto unlock;

unlock:	/* each member on its own (either order) or all at once */
	if
	:: n == 2 ->
		if
		:: atomic { incs[L] = 0; remove_request(L); incs[L + 1] = 0;
			    remove_request(L + 1); check_inv() }
		:: atomic { incs[L] = 0; remove_request(L); check_inv() };
		   atomic { incs[L + 1] = 0; remove_request(L + 1); check_inv() }
		:: atomic { incs[L + 1] = 0; remove_request(L + 1); check_inv() };
		   atomic { incs[L] = 0; remove_request(L); check_inv() }
		fi
	:: else ->
		atomic { incs[L] = 0; remove_request(L); check_inv() }
	fi;
done:	skip;
	d_step { n = 0; kind = 0; grows = 0; L = 0; g = 0; g2 = 0; ok = 0; os[t] = 0 }
}

init
{
	atomic {
		/* defaults: no program */
#if defined(CFG_GROW)
		/* single locks that grow or shrink: thread 0 may grow with
		 * every call (blocking, timed, try), thread 1 only with calls
		 * that cannot hang (two blocking growers into each other's
		 * holds are a documented caller deadlock), thread 2 locks */
		prog[0] = P_LOCK; wk[0] = K_PLAIN; fst[0] = ANY; fmd[0] = ANY;
		aft[0] = A_NONE | A_GROW | A_SHRINK; gk[0] = K_PLAIN | K_TIMED | K_TRY | K_KILL; ng[0] = 1;
		prog[1] = P_LOCK; wk[1] = K_PLAIN; fst[1] = ANY; fmd[1] = ANY;
		aft[1] = A_NONE | A_GROW | A_SHRINK; gk[1] = K_TIMED | K_TRY; ng[1] = 1;
		prog[2] = P_LOCK; wk[2] = K_PLAIN | K_TIMED; fst[2] = ANY; fmd[2] = ANY;
		aft[2] = A_NONE | A_DOWNGRADE;
#elif defined(CFG_MIXED)
		/* two sets in opposite orders, and a single lock that grows
		 * (timed or try: a blocking grow into a set's held member
		 * whose sibling waits for the grower is a documented caller
		 * deadlock) or shrinks */
		prog[0] = P_SET; wk[0] = K_PLAIN; fst[0] = 0; fmd[0] = ANY;
		prog[1] = P_SET; wk[1] = K_PLAIN | K_TIMED; fst[1] = 0; fmd[1] = ANY;
		prog[2] = P_LOCK; wk[2] = K_PLAIN; fst[2] = ANY; fmd[2] = ANY;
		aft[2] = A_NONE | A_GROW | A_SHRINK; gk[2] = K_TIMED | K_TRY; ng[2] = 1;
#elif defined(CFG_TWO)
		/* NUNITS=3: thread 2 holds [1,1] and grows on both sides at
		 * once (two growths) or on one, with every call, then may
		 * shrink; threads 0 and 1 single locks of any range and mode
		 * (thread 0 may downgrade) */
		prog[0] = P_LOCK; wk[0] = K_PLAIN; fst[0] = ANY; fmd[0] = ANY;
		aft[0] = A_NONE | A_DOWNGRADE;
		prog[1] = P_LOCK; wk[1] = K_PLAIN; fst[1] = ANY; fmd[1] = ANY;
		aft[1] = A_NONE;
		prog[2] = P_LOCK; wk[2] = K_PLAIN; fst[2] = 1; fla[2] = 1; fmd[2] = ANY;
		aft[2] = A_GROW | A_SHRINK; gk[2] = K_PLAIN | K_TIMED | K_TRY | K_KILL; ng[2] = 1;
#elif defined(CFG_TIE)
		/* NUNITS=3: thread 0 holds a read of [2,2], thread 1 a write of
		 * [2,2] (waits), thread 2 reads [0,0] and grows twice (to
		 * [0,1], then into the writer's unit [2,2]: that growth waits
		 * for the holder and, if thread 1 entered first, the writer) */
		prog[0] = P_LOCK; wk[0] = K_PLAIN; fst[0] = 2; fla[0] = 2; fmd[0] = 1;
		aft[0] = A_NONE;
		prog[1] = P_LOCK; wk[1] = K_PLAIN; fst[1] = 2; fla[1] = 2; fmd[1] = 0;
		aft[1] = A_NONE;
		prog[2] = P_LOCK; wk[2] = K_PLAIN; fst[2] = 0; fla[2] = 0; fmd[2] = ANY;
		aft[2] = A_NONE | A_GROW | A_SHRINK; gk[2] = K_PLAIN | K_TIMED; ng[2] = 2;
#elif defined(CFG_TIE4)
		/* 4 threads, a tie from overtaking: a read of [0,1] held; a
		 * write of [1,1] waits (seq v), a write of [0,0] waits (v+1); a
		 * read of [0,0] overtakes the latter (seq v) and grows to [0,1].
		 * NUNITS=3: the read holds [0,2], the tied writer is on [2,2],
		 * and the overtaker grows twice (to [0,1], then into [2,2];
		 * or at once to [0,2]) */
		prog[0] = P_LOCK; wk[0] = K_PLAIN; fst[0] = 0; fla[0] = NUNITS - 1;
		fmd[0] = 1; aft[0] = A_NONE;
		prog[1] = P_LOCK; wk[1] = K_PLAIN; fst[1] = NUNITS - 1; fla[1] = NUNITS - 1;
		fmd[1] = 0; aft[1] = A_NONE;
		prog[2] = P_LOCK; wk[2] = K_PLAIN; fst[2] = 0; fla[2] = 0; fmd[2] = 0;
		aft[2] = A_NONE;
		prog[3] = P_LOCK; wk[3] = K_PLAIN; fst[3] = 0; fla[3] = 0; fmd[3] = 1;
		aft[3] = A_NONE | A_GROW; gk[3] = K_PLAIN; ng[3] = NUNITS - 1;
#else	/* CFG_SETS */
		/* two sets of two requests (modes chosen) on units x = [0,0],
		 * y = [1,1] in opposite orders, one blocking, one blocking,
		 * timed or try; thread 2 a single lock (any range, mode,
		 * blocking or timed) that may shrink */
		prog[0] = P_SET; wk[0] = K_PLAIN; fst[0] = 0; fmd[0] = ANY;
		prog[1] = P_SET; wk[1] = K_PLAIN | K_TIMED | K_TRY; fst[1] = 0; fmd[1] = ANY;
#ifdef MUT_SET_ONE_AT_A_TIME
		wk[1] = K_PLAIN | K_TIMED;	/* (a try entering one by one) */
#endif
#ifdef SET_ANY
		fst[0] = ANY; fst[1] = ANY;	/* members on any ranges */
#endif
#ifndef TWO_THREADS
		prog[2] = P_LOCK; wk[2] = K_PLAIN | K_TIMED; fst[2] = ANY; fmd[2] = ANY;
		aft[2] = A_NONE | A_SHRINK;
#endif
#endif
		run thread(0);
		run thread(1);
		run thread(2)
#if NT == 4
		; run thread(3)
#endif
	}
}
