/* SPDX-License-Identifier: MIT */
/*
 * segments.pml -- a SPIN model of the SEGMENTED tree (docs/design.md,
 * "Segments"; the code: src/segments.c): the key space split into
 * segments, each with its own internal lock, interval tree, seqnum counter
 * and nr_waiting; a request inside one segment touches only that segment;
 * a request spanning several takes their locks in ascending order, holds
 * them all until it has entered every one (one arrival), and has one PART
 * per segment (the hull of its range in that segment) with a per-part
 * count; its wait word is the sum of its parts' counts (the code keeps a
 * word per part and waits for each in turn: the same grant condition).
 * This model was written BEFORE the code (the project's order of proof)
 * and checked the design; the code's two simplifications -- a spanning
 * request never overtakes, and its give-up goes part by part -- were
 * brought into it before the code was merged.
 *
 * LEVEL.  As multirange.pml: a critical section under a set of segment
 * locks is one atomic step, after the locks were taken one by one (each
 * acquisition its own step, so lock order matters and is checked).  That
 * abstraction is valid only because no critical section reads a value
 * that a critical section under DISJOINT locks writes, except through an
 * atomic read-modify-write: the wait word of a spanning request is
 * decremented by releases in any of its segments (a CAS loop: one step),
 * and design rule S5 (spanning waiters are HANDOFF-marked at entry: never
 * overtaken, never ELIGIBLE) is what keeps every other cross-segment read
 * of a word out of the decisions.  A wait word is reduced to its count
 * (the sum of the parts' counts), HANDOFF and ELIGIBLE; its futex/spin
 * protocol is rangelock.pml's.
 *
 * GEOMETRY.  Units 0..3, 2 segments (-DCFG_SEG3: units 0..5, 3 segments),
 * stripes of 2 units: segment(u) = u / 2.  A part of request r in segment
 * g covers the hull of r's range within g's units; parts are compared by
 * hull.  A request spanning three segments has a part in the middle one
 * too, covering all of it.
 *
 * MODEL STEP -> DESIGN RULE (docs/design.md, "Segments")
 * --------------------------------------------------------------------
 * LOCK(g)              S2  one segment lock (futex mutex), ascending order
 * enter:               S2, S3  one arrival: all locks held, every segment
 *                      scanned, ONE seqnum = max of the segments' counters
 *                      (each counter then set past it), count in every
 *                      segment; only a single-segment request overtakes
 *                      (default policy): a spanning one never does
 * put_blocker(r, g)    S4  one blocker off r's part in g AND off r's word;
 *                      the word's last blocker grants (or ELIGIBLE)
 * add_blocker(r, g)    S3  an overtaker / a growth: one blocker more
 * remove_part(r, g)    S4  a part leaves g: release walk in g only
 * unlock:              S4  parts leave one segment at a time, ascending
 * giveup:              S6  as the code (seg_span.c): the part waited for
 *                      (the lowest not granted) under its lock: kept if
 *                      granted meanwhile, else withdrawn; then EVERY other
 *                      part leaves, one segment lock at a time, ascending
 * claim:, mark:        S5  single-segment waiters only (spanning ones are
 *                      marked at entry)
 * grow:, merge()       S7  a growth into a segment the owner is not in:
 *                      precedes() by seqnum across segments (Lamport seqs)
 * shrink (CFG_SHRINK)  S7  a held request keeps a sub-range: its segment
 *                      locks, ascending, then one step under all of them:
 *                      parts out, hulls smaller, the release walks
 * cancel (CFG_ASYNC)   a spanning K_TIMED request is an asynchronous
 *                      one: its give-up is range_lock_async_cancel()'s,
 *                      decided against the last part's grant (both
 *                      enabled once every part is granted), then every
 *                      part out, granted ones too, one lock at a time
 * check_inv()          the invariant, per segment, per part
 *
 * PROPERTIES: exclusion (ghost critical sections, full ranges); two held
 * parts in one segment never intersect and conflict; the per-part
 * counting invariant, nr_waiting per segment, word states, no pair counting
 * each other; PRECISION: a part counts only parts whose hulls -- so whose
 * ranges -- intersect (asserted on every count and every release walk);
 * FIFO (-DFIFO): at every grant of an arrival, no intersecting conflicting
 * arrival that came EARLIER (ghost arrival clock, the entry step) is still
 * in the tree or entering; default policy: bounded overtaking (no request
 * that entered after a waiter's mark and conflicts with it is granted
 * before it); a request that finishes leaves no part behind; no invalid
 * end state (deadlock, waiter left behind).
 *
 * CONFIGURATIONS: CFG_SPAN (default): thread 0 writes [1,2] (spanning);
 * thread 1 any spanning or single range, any mode, plain / timed / try;
 * thread 2 any single-segment range, any mode, plain / timed.  CFG_GROW:
 * thread 0 holds [1,1] or [1,2] and grows (plain or timed): a hull in a
 * segment it holds, a new part in one it does not, or both; threads 1 and
 * 2 as in init.  "Held", for a growth, is the WHOLE request's hold: a span
 * holds once its thread has claimed it (hflag): after its pass over the
 * parts, under the locks of all its segments, if every part is still
 * granted; a growth puts a blocker on a later span's granted part (a
 * revocation) rather than wait for it.  CFG_WRAP (with CFG_GROW): stripes of one unit that
 * wrap, unit u in segment u mod 2, where a span's thread can pass a part
 * that a growth then revokes.  CFG_SEG3: 3
 * segments; thread 0 writes [1,4] (all three), plain or timed; thread 1
 * [3,4] (two), [2,3] (the middle one) or [0,5] (all), any mode, plain /
 * timed / try; thread 2 [2,2], [3,3] (middle) or [5,5], any mode, plain /
 * timed.  CFG_SHRINK (with CFG_SEG3): thread 0 plain, then shrinks [1,4]
 * to [2,4], [1,3], [3,4], [1,2], [2,3] or [3,3].  CFG_ASYNC (with any of
 * CFG_SPAN and CFG_SEG3): a timed spanning request gives up as an
 * asynchronous request's cancel.  -DFIFO: FIFO tree.
 *
 * MUTANTS (-DMUT_x; each must fail)
 *   OUT_OF_ORDER     thread 1 takes its segment locks in DESCENDING order
 *   EARLY_RELEASE    each segment's lock is released once the part is in
 *                    (its own seqnum there) before the next is taken
 *                    (FIFO only; 2 or 3 segments)
 *   HAND_OVER_HAND   the same, but each lock is released only once the
 *                    next is taken (FIFO only).  Not a ctest mutant: the
 *                    arrival ghost (set at the first segment's entry)
 *                    also flags schedules the correct entry allows; with
 *                    -DNO_ARRIVAL_CHECK it verifies (no deadlock,
 *                    exclusion, the invariant)
 *   PARTIAL_GIVEUP   a spanning give-up withdraws only the part it waited
 *                    for (the lowest not yet granted): the others stay
 *   SEG_GRANULAR     a part counts every conflicting part of its segment,
 *                    intersecting or not (precision)
 *   GROW_NO_RAISE    a growth entering a segment does not raise that
 *                    segment's seqnum counter past its own seqnum (CFG_GROW)
 *   GROW_PART_HELD   a growth takes a span's granted part for a holder
 *                    (a segment's own grow would): deadlock (CFG_GROW)
 *   CLAIM_IGNORES_REVOCATION  a span's claim does not look at its parts
 *                    again, so it misses a revocation since its pass
 *                    saw the part: exclusion (CFG_GROW, CFG_WRAP)
 *   GROW_MERGE_NO_RECOUNT  the merge of a grown hull keeps both blockers
 *                    of a request that counted the growth and the owner
 *   CLAIM_DESCENDING  a span's claim takes its segment locks descending:
 *                    deadlock with an ascending entry (CFG_GROW)
 *   MERGE_NO_HFLAG   an owner that becomes a span at the merge is not
 *                    marked held (CFG_GROW)
 *   NO_MIDDLE_PART   a request spanning three segments inserts parts in
 *                    its first and last only (CFG_SEG3)
 *   SHRINK_DESCENDING  the shrink takes its locks descending (CFG_SHRINK)
 *   SHRINK_KEEPS_PART  a part whose segment the new range leaves stays
 *   SHRINK_NO_WALK     a smaller hull without its release walk
 *   ASYNC_CANCEL_KEEPS_GRANTED  a cancel withdraws only the queued parts
 *                    (CFG_ASYNC): the granted ones stay
 *   CLAIM_KEEPS_ELIGIBLE  a claim that finds its request ELIGIBLE does not
 *                    take the grant and tries again: a livelock, with no
 *                    invalid end state (the thread always has a step), so
 *                    the safety runs pass it; the cycle check (-DNP,
 *                    pan -l) catches it
 *
 * CYCLES (-DNP, pan -l; the model has no progress labels): every thread
 * makes one request, and every wait is a guard, not a poll, so the
 * correct model has no cycle at all: every execution is finite, and with
 * no invalid end state (the safety runs) every request ends -- granted,
 * given up, or refused to a try -- under every schedule, without a
 * fairness assumption.  The check fails on any reachable cycle.
 */

#if defined(CFG_SHRINK) && !defined(CFG_SEG3)
#error "CFG_SHRINK is a 3-segment configuration (-DCFG_SEG3)"
#endif
#if (defined(MUT_SHRINK_DESCENDING) || defined(MUT_SHRINK_KEEPS_PART) || \
     defined(MUT_SHRINK_NO_WALK)) && !defined(CFG_SHRINK)
#error "the shrink mutants need -DCFG_SHRINK"
#endif
#ifdef MUT_SHRINK_NO_WALK
#define SHRINK_WALKS(t, k) (!pin[P(t, k)])	/* no walk for a smaller hull */
#else
#define SHRINK_WALKS(t, k) 1
#endif
#ifdef CFG_SEG3
#define NS 3		/* segments */
#ifdef CFG_GROW
#error "CFG_GROW is a 2-segment configuration"
#endif
#else
#define NS 2
#endif
#if defined(CFG_WRAP) && (defined(CFG_SEG3) || !defined(CFG_GROW))
#error "CFG_WRAP is a CFG_GROW configuration (2 segments)"
#endif
#if (defined(MUT_EARLY_RELEASE) || defined(MUT_HAND_OVER_HAND)) && \
    (!defined(FIFO) || defined(CFG_GROW))
#error "MUT_EARLY_RELEASE and MUT_HAND_OVER_HAND: FIFO trees, no CFG_GROW"
#endif
#define NU (2 * NS)	/* units */
#define NT 3		/* threads */
#define NQ 4		/* requests: thread t's is t; 3 is thread 0's growth */
#define GR 3
#define NP (NQ * NS)	/* parts: P(r, g) */
#define P(r, g) ((r) * NS + (g))

#ifdef FIFO
#define FIFO_TREE 1
#else
#define FIFO_TREE 0
#endif

#define K_PLAIN 1
#define K_TIMED 2
#define K_TRY   4
#define ANY 2

/* ---- the segments -------------------------------------------------- */
byte lk[NS];		/* segment lock: 0 free, else thread + 1 */
byte gseq[NS] = 8;	/* the segment's next seqnum (Lamport-raised) */
byte nwait[NS];		/* parts in the segment with a count > 0 */

/* ---- the parts ----------------------------------------------------- */
bit  pin[NP];		/* part present in its segment's tree */
byte pst[NP], pla[NP];	/* its hull */
byte psq[NP];		/* its seqnum (all parts of a request share one) */
byte pcnt[NP];		/* its count: blockers met in this segment */

/* ---- the requests (the word is the sum of the parts' counts) -------- */
bit  rd[NQ];
byte st[NQ], la[NQ];	/* the full range */
bit  ho[NQ];		/* HANDOFF mark */
bit  el[NQ];		/* ELIGIBLE */
bit  ent[NQ];		/* entering: seen so only in the two mutants of
			 * one-segment-at-a-time entry */
bit  spn[NQ];		/* entered over several segments: a span (S7) */
bit  hflag[NQ];		/* the span's HELD bit (CFG_GROW): set by its
			 * thread's claim, under all its segment locks,
			 * which fails if a part its pass saw granted was
			 * revoked since (a growth's blocker on a part
			 * whose count is 0) */

/* ---- ghosts -------------------------------------------------------- */
bit  incs[NQ];		/* the owner is in its critical section */
bit  rel[NQ];		/* being unlocked */
byte arr[NQ];		/* arrival (the entry step) */
byte clk = 1;
byte late[NQ];		/* bit q: q entered after r's mark and conflicts */

hidden byte hq, hr, hc, hg;		/* scratch, d_step only */
hidden int rmask[NT];
hidden byte fmd[NT], wk[NT];	/* configuration */

#define OWNER(r)   ((r) == GR -> 0 : (r))
#define ISG(r)     ((r) == GR)
#if NS == 3
#define NPIN(r)    (pin[P(r, 0)] + pin[P(r, 1)] + pin[P(r, 2)])
#define TOT(r)     (pcnt[P(r, 0)] + pcnt[P(r, 1)] + pcnt[P(r, 2)])
#else
#define NPIN(r)    (pin[P(r, 0)] + pin[P(r, 1)])
#define TOT(r)     (pcnt[P(r, 0)] + pcnt[P(r, 1)])
#endif
#define INR(r)     (NPIN(r) > 0)
#define SPAN(r)    (NPIN(r) > 1)
#define HELD(r)    (INR(r) && TOT(r) == 0 && !el[r] && !ent[r])
#define CONFL(a, b) (!(rd[a] && rd[b]))
#define RISECT(a, b) (st[a] <= la[b] && st[b] <= la[a])
/* the growth's units are its parts (two pieces may leave a gap) */
#define GMEET(gr, r, g) (pin[P(gr, g)] && pst[P(gr, g)] <= la[r] && st[r] <= pla[P(gr, g)])
#define GISECT(gr, r) (GMEET(gr, r, 0) || GMEET(gr, r, NS - 1))
#define ISECT(a, b) (ISG(a) -> GISECT(a, b) : (ISG(b) -> GISECT(b, a) : RISECT(a, b)))
#define PISECT(p, q) (pst[p] <= pla[q] && pst[q] <= pla[p])
/* hull in segment g of a range [a, b] that meets g; the segments a range
 * meets are SEGLO..SEGHI */
#ifndef CFG_WRAP
/* two units a segment: segment g holds units 2g and 2g + 1 */
#define RHST(a, g) ((a) > 2 * (g) -> (a) : 2 * (g))
#define RHLA(b, g) ((b) < 2 * (g) + 1 -> (b) : 2 * (g) + 1)
#define SEGLO(a, b) ((a) / 2)
#define SEGHI(a, b) ((b) / 2)
#else
/* stripes of one unit that wrap: unit u in segment u mod 2, so a hull
 * covers units of the other segment (precision: two parts meet in g
 * exactly when their ranges share a unit of g) */
#define RHST(a, g) ((a) + (((a) + (g)) % 2))
#define RHLA(b, g) ((b) - (((b) + (g)) % 2))
#define SEGLO(a, b) ((b) > (a) -> 0 : (a) % 2)
#define SEGHI(a, b) ((b) > (a) -> 1 : (a) % 2)
#endif
#define HST(r, g)  RHST(st[r], g)
#define HLA(r, g)  RHLA(la[r], g)
#define SQ(r, g)   psq[P(r, g)]
/* mutant NO_MIDDLE_PART: a spanning request inserts no part in the
 * segments strictly between its first and its last */
#ifdef MUT_NO_MIDDLE_PART
#define SKIPPED(g) ((g) > lo && (g) < hi)
#else
#define SKIPPED(g) 0
#endif

/* precedes(Q, R) in segment g (docs/design.md section 12, seqnums
 * compared across segments: Lamport seqnums, rule S3) */
#define PREC_NN(q, r, g) (SQ(q, g) < SQ(r, g))
/* "held", for a growth: the whole request holds -- a spanning request's
 * granted part does not, while another part waits (S7).  The mutant
 * GROW_PART_HELD takes a part's count 0 for a hold, as a segment's own
 * grow (protocol.c) would.  A span holds once its thread has claimed it
 * (hflag); a single-segment request when its count is 0, as in a plain
 * tree */
#ifndef MUT_GROW_PART_HELD
#define GHELD(q, g) (spn[q] -> hflag[q] : HELD(q))
#else
#define GHELD(q, g) (HELD(q) || hflag[q] || (pcnt[P(q, g)] == 0 && !el[q] && !ent[q]))
#endif
#define PREC_NG(q, r, g) (SQ(q, g) <= SQ(r, g) || GHELD(q, g))
#define PREC_GN(q, r, g) (SQ(r, g) > SQ(q, g) && !GHELD(r, g))
#define PREC(q, r, g) (ISG(q) -> PREC_GN(q, r, g) : \
		       (ISG(r) -> PREC_NG(q, r, g) : PREC_NN(q, r, g)))
#ifndef MUT_SEG_GRANULAR
#define MEET(q, r, g) PISECT(P(q, g), P(r, g))
#else
#define MEET(q, r, g) 1					/* mutant */
#endif
/* R's part in g counts Q's part in g */
#define COUNTS(q, r, g) ((q) != (r) && OWNER(q) != OWNER(r) && pin[P(q, g)] && \
			 pin[P(r, g)] && MEET(q, r, g) && CONFL(q, r) && PREC(q, r, g))

/* An arrival q that came before r and meets it is still there: FIFO check */
#define EARLIER(q, r) ((q) != (r) && !ISG(q) && (INR(q) || ent[q]) && !rel[q] && \
		       arr[q] != 0 && arr[q] < arr[r] && ISECT(q, r) && CONFL(q, r))

/* ---- the invariant ------------------------------------------------- */
inline check_inv()
{
#ifndef NO_INVARIANT
	d_step {
		hg = 0;
		do
		:: hg < NS ->
			hc = 0; hq = 0;
			do
			:: hq < NQ ->
				if
				:: pin[P(hq, hg)] && pcnt[P(hq, hg)] > 0 -> hc++
				:: else
				fi;
				hq++
			:: else -> break
			od;
			assert(hc == nwait[hg]);
			hr = 0;
			do
			:: hr < NQ ->
				if
				:: pin[P(hr, hg)] ->
					hc = 0; hq = 0;
					do
					:: hq < NQ ->
						if
						:: COUNTS(hq, hr, hg) ->
							hc++;
							assert(!COUNTS(hr, hq, hg));
							/* precision */
							assert(ISECT(hq, hr))
						:: else
						fi;
						if
						:: hq != hr && OWNER(hq) != OWNER(hr) &&
						   pin[P(hq, hg)] &&
						   PISECT(P(hq, hg), P(hr, hg)) && CONFL(hq, hr) ->
							assert(!HELD(hq) || !HELD(hr))
						:: else
						fi;
						hq++
					:: else -> break
					od;
					assert(pcnt[P(hr, hg)] == hc)
				:: else
				fi;
				hr++
			:: else -> break
			od;
			hg++
		:: else -> break
		od;
		hr = 0;
		do
		:: hr < NQ ->
			assert(!el[hr] || (TOT(hr) == 0 && !FIFO_TREE && !SPAN(hr)));
			assert(!ho[hr] || (TOT(hr) > 0 && !FIFO_TREE));
#ifdef CFG_GROW
			/* a span in its critical section has claimed its hold */
			assert(!(spn[hr] && incs[hr]) || hflag[hr]);
#endif
			hr++
		:: else -> break
		od;
		hq = 0; hr = 0; hc = 0; hg = 0
	}
#else
	skip
#endif
}

/* r is granted (word 0 seen or written): the ordering ghosts */
inline granted(r)
{
	d_step {
		hq = 0;
		do
		:: hq < NQ ->
#if defined(FIFO) && !defined(NO_ARRIVAL_CHECK)
			assert(ISG(r) || !EARLIER(hq, r));
#endif
			assert(!(ho[hq] && hq != r && (late[hq] & (1 << r))));
			hq++
		:: else -> break
		od;
		hq = 0;
		ho[r] = 0; late[r] = 0
	}
}

/* one blocker off r's part in g (a CAS loop on r's word: one step) */
inline put_blocker(r, g)
{
	assert(pcnt[P(r, g)] >= 1 && !el[r]);
	pcnt[P(r, g)]--;
	if
	:: pcnt[P(r, g)] == 0 -> nwait[g]--
	:: else
	fi;
	if
	:: TOT(r) == 0 && !ent[r] && !rel[r] ->	/* (not one giving up) */
		if
		:: FIFO_TREE || ho[r] || spn[r] || ISG(r) -> granted(r)
		:: !FIFO_TREE && !ho[r] && !spn[r] && !ISG(r) -> granted(r)	/* spinning */
		:: !FIFO_TREE && !ho[r] && !spn[r] && !ISG(r) -> el[r] = 1	/* asleep */
		fi
	:: else
	fi
}

/* one blocker more on r's part in g: never on a held request */
inline add_blocker(r, g)
{
	assert(!(spn[r] -> hflag[r] : HELD(r)) && !ent[r]);
	if
	:: TOT(r) == 0 && !spn[r] -> assert(el[r]); el[r] = 0
	:: else
	fi;
	if
	:: pcnt[P(r, g)] == 0 -> nwait[g]++	/* (a span's: revoked, CFG_GROW) */
	:: else
	fi;
	pcnt[P(r, g)]++
}

/* r's part leaves segment g: the release walk there, then it is cleared */
inline remove_part(r, g)
{
	assert(pin[P(r, g)]);
	j = (nwait[g] == 0 -> NQ : 0);
	do
	:: j < NQ ->
		if
		:: COUNTS(r, j, g) -> assert(ISECT(r, j)); put_blocker(j, g)
		:: else
		fi;
		j++
	:: else -> break
	od;
	j = 0;
	if
	:: pcnt[P(r, g)] > 0 -> nwait[g]--
	:: else
	fi;
	pin[P(r, g)] = 0; pst[P(r, g)] = 0; pla[P(r, g)] = 0; psq[P(r, g)] = 0;
	pcnt[P(r, g)] = 0
}

inline shadow_check(r)
{
	d_step {
		hq = 0;
		do
		:: hq < NQ ->
			assert(!(incs[hq] && OWNER(hq) != OWNER(r) && ISECT(hq, r) &&
				 CONFL(hq, r)));
			hq++
		:: else -> break
		od;
		hq = 0
	}
}

#define LOCK(g)  atomic { lk[g] == 0 -> lk[g] = t + 1 }

/* the request's own segments lo..hi, ascending: one step per lock (NS <= 3) */
inline lock_mine()
{
	LOCK(lo);
	if
	:: hi == lo + 2 -> LOCK(lo + 1); LOCK(hi)
	:: hi == lo + 1 -> LOCK(hi)
	:: hi == lo
	fi
}

/* mutant: descending (hi > lo) */
inline lock_mine_descending()
{
	if
	:: hi == lo + 2 -> LOCK(hi); LOCK(lo + 1); LOCK(lo)
	:: hi == lo + 1 -> LOCK(hi); LOCK(lo)
	fi
}

inline unlock_mine()
{
	d_step {
		k = lo;
		do
		:: k <= hi -> assert(lk[k] == t + 1); lk[k] = 0; k++
		:: else -> break
		od;
		k = 0
	}
}

proctype thread(byte t)
{
	byte lo, hi, j, k, s, sc, mn, kind, d;
#ifdef CFG_GROW
	byte c, g, gs, gl, glo, ghi, kk;	/* the grow; the claim's pass */
#endif
#ifdef CFG_SHRINK
	byte ns, nl;	/* the kept range */
	short cm;	/* who counted which part (the walks) */
#endif
	byte pc[NS];
	bit mw, ov, ok, mk;

	/* the request: range, mode, call */
	atomic {
		if
		:: rmask[t] & 1 -> st[t] = 0; la[t] = 0
		:: rmask[t] & 2 -> st[t] = 0; la[t] = 1
		:: rmask[t] & 4 -> st[t] = 1; la[t] = 1
		:: rmask[t] & 8 -> st[t] = 1; la[t] = 2
		:: rmask[t] & 16 -> st[t] = 2; la[t] = 2
		:: rmask[t] & 32 -> st[t] = 2; la[t] = 3
		:: rmask[t] & 64 -> st[t] = 3; la[t] = 3
		:: rmask[t] & 128 -> st[t] = 0; la[t] = 3
		:: rmask[t] & 256 -> st[t] = 0; la[t] = 2
		:: rmask[t] & 512 -> st[t] = 1; la[t] = 3
		/* CFG_SEG3: units 0..5 */
		:: rmask[t] & 1024 -> st[t] = 1; la[t] = 4
		:: rmask[t] & 2048 -> st[t] = 3; la[t] = 4
		:: rmask[t] & 4096 -> st[t] = 2; la[t] = 3
		:: rmask[t] & 8192 -> st[t] = 0; la[t] = 5
		:: rmask[t] & 16384 -> st[t] = 3; la[t] = 3
		:: rmask[t] & 32768 -> st[t] = 5; la[t] = 5
		fi;
		if
		:: fmd[t] == ANY -> if :: rd[t] = 1 :: rd[t] = 0 fi
		:: else -> rd[t] = fmd[t]
		fi;
		if
		:: wk[t] & K_PLAIN -> kind = K_PLAIN
		:: wk[t] & K_TIMED -> kind = K_TIMED
		:: wk[t] & K_TRY -> kind = K_TRY
		fi;
		lo = SEGLO(st[t], la[t]); hi = SEGHI(st[t], la[t])
	}

#if !defined(MUT_EARLY_RELEASE) && !defined(MUT_HAND_OVER_HAND)
	/* S2: the segment locks, ascending (the mutant: descending) */
#ifdef MUT_OUT_OF_ORDER
	if
	:: t == 1 && hi > lo -> lock_mine_descending()
	:: else -> lock_mine()
	fi;
#else
	lock_mine();
#endif
enter:	/* S3: one arrival under all of them */
	atomic {
		d_step {
			sc = 0; mw = 0; mn = 255;
			k = lo;
			do
			:: k <= hi ->
				pst[P(t, k)] = HST(t, k); pla[P(t, k)] = HLA(t, k);
				pc[k] = 0; j = (SKIPPED(k) -> NQ : 0);
				do
				:: j < NQ ->
					if
					:: j != t && pin[P(j, k)] && MEET(j, t, k) && CONFL(j, t) ->
						pc[k]++;
						if
						:: HELD(j) || ho[j] || SPAN(j) -> mw = 1
						:: else
						fi;
						if
						:: SQ(j, k) < mn -> mn = SQ(j, k)
						:: else
						fi
					:: else
					fi;
					j++
				:: else -> break
				od;
				sc = sc + pc[k];
				k++
			:: else -> break
			od;
			j = 0; k = 0;
			/* the code: a spanning request never overtakes */
			ov = (!FIFO_TREE && sc > 0 && !mw && hi == lo);
			ok = !(kind == K_TRY && sc > 0 && !ov)
		}
		if
		:: !ok ->	/* a busy try: nothing inserted */
			d_step {
				k = lo;
				do
				:: k <= hi -> pst[P(t, k)] = 0; pla[P(t, k)] = 0; k++
				:: else -> break
				od;
				k = 0
			}
		:: else ->
			arr[t] = clk; clk++;
			/* ghost: marked waiters this arrival conflicts with */
			d_step {
				hq = 0;
				do
				:: hq < NQ ->
					if
					:: ho[hq] && ISECT(hq, t) && CONFL(hq, t) ->
						late[hq] = late[hq] | (1 << t)
					:: else
					fi;
					hq++
				:: else -> break
				od;
				hq = 0
			}
			if
			:: ov ->	/* overtake as a whole: min - 1, pass all */
				s = mn - 1;
				k = lo;
				do
				:: k <= hi && SKIPPED(k) -> k++
				:: k <= hi && !SKIPPED(k) ->
					j = 0;
					do
					:: j < NQ ->
						if
						:: j != t && pin[P(j, k)] && MEET(j, t, k) &&
						   CONFL(j, t) -> assert(!HELD(j)); add_blocker(j, k)
						:: else
						fi;
						j++
					:: else -> break
					od;
					pin[P(t, k)] = 1; psq[P(t, k)] = s; pcnt[P(t, k)] = 0;
					k++
				:: else -> break
				od
			:: else ->	/* one seqnum: the max of the counters */
				d_step {
					s = 0; k = lo;
					do
					:: k <= hi ->
						s = (gseq[k] > s -> gseq[k] : s);
						k++
					:: else -> break
					od;
					k = lo
				}
				do
				:: k <= hi && SKIPPED(k) -> k++
				:: k <= hi && !SKIPPED(k) ->
					gseq[k] = s + 1;
					pin[P(t, k)] = 1; psq[P(t, k)] = s;
					pcnt[P(t, k)] = pc[k];
					if
					:: pc[k] > 0 -> nwait[k]++
					:: else
					fi;
					k++
				:: else -> break
				od;
				/* S5: a spanning waiter is marked at entry */
				ho[t] = (!FIFO_TREE && hi > lo && sc > 0)
			fi;
			spn[t] = (hi > lo);
			j = 0; k = 0;
			d_step {
				do
				:: k < NS -> pc[k] = 0; k++
				:: else -> break
				od;
				k = 0
			}
			if
			:: TOT(t) == 0 -> granted(t)
			:: else
			fi
		fi;
		unlock_mine();
		mn = 0; sc = 0; mw = 0; ov = 0;
		check_inv()
	}
#else
	/* mutants (FIFO): one segment at a time, one seqnum per segment;
	 * EARLY_RELEASE drops a segment's lock before it takes the next,
	 * HAND_OVER_HAND only once it holds the next */
	k = lo;
	LOCK(lo);
	do
	:: k <= hi ->
		atomic {
			if
			:: k == lo -> ent[t] = 1; arr[t] = clk; clk++; spn[t] = (hi > lo)
			:: else
			fi;
			pst[P(t, k)] = HST(t, k); pla[P(t, k)] = HLA(t, k);
			pin[P(t, k)] = 1; psq[P(t, k)] = gseq[k]; gseq[k]++;
			j = 0; sc = 0;
			do
			:: j < NQ ->
				if
				:: COUNTS(j, t, k) -> sc++
				:: else
				fi;
				j++
			:: else -> break
			od;
			j = 0;
			pcnt[P(t, k)] = sc;
			if
			:: sc > 0 -> nwait[k]++
			:: else
			fi;
			sc = 0;
			if
			:: k == hi -> ent[t] = 0;
				if
				:: TOT(t) == 0 -> granted(t)
				:: else
				fi
			:: else
			fi;
#ifdef MUT_EARLY_RELEASE
			lk[k] = 0;
#else
			if
			:: k == hi -> lk[k] = 0
			:: else
			fi;
#endif
			check_inv()
		}
		if
		:: k < hi ->
			LOCK(k + 1);
#ifndef MUT_EARLY_RELEASE
			lk[k] = 0;
#endif
		:: else
		fi;
		k++
	:: else -> break
	od;
	k = 0;
	ok = 1;
#endif
	if
	:: !ok -> goto done
	:: else
	fi;

swait:	/* wait for the word */
	if
#ifndef CFG_GROW
	/* without growths a part's count never rises again: the pass over
	 * the parts and the claim (below) are this one atomic test */
	:: atomic { HELD(t) -> shadow_check(t); incs[t] = 1 }
#else
	:: atomic { !spn[t] && HELD(t) -> shadow_check(t); incs[t] = 1 }
	/* A span (S7): the thread waits for each part in turn, then claims
	 * the hold under the locks of all its segments, taken ascending: it
	 * holds if every part is still granted (a growth may have revoked a
	 * part its pass saw granted: then a new pass).  A growth revokes only
	 * under the part's segment lock, and only while hflag is clear. */
	:: atomic { spn[t] && kk == 0 -> kk = lo + 1 }; goto swait
	:: atomic { spn[t] && kk > 0 && kk <= hi + 1 &&
		    (!pin[P(t, kk - 1)] || pcnt[P(t, kk - 1)] == 0) -> kk++ }; goto swait
	:: spn[t] && kk == hi + 2 ->
#ifndef MUT_CLAIM_DESCENDING
		LOCK(lo);
		LOCK(hi);
#else
		LOCK(hi);	/* mutant: the claim's locks descending */
		LOCK(lo);
#endif
		atomic {
			if
#ifndef MUT_CLAIM_IGNORES_REVOCATION
			:: TOT(t) == 0 ->
#else
			:: true ->	/* mutant: the claim does not look again */
#endif
				hflag[t] = 1; shadow_check(t); incs[t] = 1; ok = 1
			:: else -> kk = 0; ok = 0
			fi;
			lk[hi] = 0;
			lk[lo] = 0;
			check_inv()
		};
		if
		:: !ok -> goto swait
		:: else -> kk = 0
		fi
#endif
	:: el[t] ->		/* claim (single-segment only) */
		LOCK(lo);
		atomic {
			if
#ifndef MUT_CLAIM_KEEPS_ELIGIBLE
			:: el[t] -> el[t] = 0; granted(t)
#else
			:: el[t] -> skip	/* mutant: the grant is not taken */
#endif
			:: else
			fi;
			lk[lo] = 0;
			check_inv()
		};
		goto swait
	:: !FIFO_TREE && !mk && hi == lo && TOT(t) > 0 ->	/* mark */
		LOCK(lo);
		atomic {
			if
			:: el[t] -> el[t] = 0; granted(t)
			:: TOT(t) > 0 -> ho[t] = 1
			:: else
			fi;
			mk = 1; lk[lo] = 0;
			check_inv()
		};
		goto swait
#ifdef CFG_ASYNC
	:: kind == K_TIMED && hi > lo ->	/* an asynchronous request's cancel */
		/* As seg_async_cancel() (seg_async.c): one CAS decides between
		 * the cancel and the completion of the last part -- so both
		 * are enabled once every part is granted (the option above and
		 * this one) -- then EVERY part leaves, granted or queued, one
		 * segment lock at a time, ascending (rl_span_leave()). */
		k = lo;
		do
		:: k <= hi && pin[P(t, k)] ->
			LOCK(k);
			atomic {
				if
				:: !rel[t] -> ho[t] = 0; late[t] = 0; rel[t] = 1
				:: else
				fi;
#ifdef MUT_ASYNC_CANCEL_KEEPS_GRANTED
				if
				:: pcnt[P(t, k)] > 0 -> remove_part(t, k)
				:: else
				fi;
#else
				remove_part(t, k);
#endif
				lk[k] = 0;
				check_inv()
			};
			k++
		:: k <= hi && !pin[P(t, k)] -> k++
		:: else -> break
		od;
		k = 0;
		goto done
#else
	:: kind == K_TIMED && !HELD(t) && hi > lo ->	/* S6: a spanning give-up */
		/* As the code does it (seg_span.c): the part it waits for --
		 * the lowest not yet granted -- gives up under its segment's
		 * lock, and is kept if granted meanwhile (it then waits on);
		 * else every other part leaves, one segment at a time,
		 * ascending, each under its own lock (span_abandon()). */
		d_step {
			k = lo;
			do
			:: k <= hi && (!pin[P(t, k)] || pcnt[P(t, k)] == 0) -> k++
			:: else -> break
			od
		}
		if
		:: k > hi -> k = 0; goto swait	/* all granted now */
		:: else
		fi;
		LOCK(k);
		atomic {
			if
			:: pcnt[P(t, k)] == 0 -> ok = 1
			:: else ->
				ho[t] = 0; late[t] = 0; rel[t] = 1;
				remove_part(t, k);
				ok = 0
			fi;
			lk[k] = 0;
			check_inv()
		};
		if
		:: ok -> k = 0; goto swait
		:: else
		fi;
#ifndef MUT_PARTIAL_GIVEUP
		k = lo;
		do
		:: k <= hi && pin[P(t, k)] ->
			LOCK(k);
			atomic { remove_part(t, k); lk[k] = 0; check_inv() };
			k++
		:: k <= hi && !pin[P(t, k)] -> k++
		:: else -> break
		od;
#endif
		k = 0;
		goto done
#endif
	:: kind == K_TIMED && !HELD(t) && hi == lo ->	/* S6: give up */
		lock_mine();
		atomic {
			if
			:: TOT(t) == 0 ->	/* granted or ELIGIBLE: keep */
				if
				:: el[t] -> el[t] = 0; granted(t)
				:: else
				fi;
				ok = 1
			:: else ->
				ho[t] = 0; late[t] = 0; rel[t] = 1;
				k = lo;
				do
				:: k <= hi && pin[P(t, k)] -> remove_part(t, k); k++
#ifdef MUT_PARTIAL_GIVEUP
					; break
#endif
				:: k <= hi && !pin[P(t, k)] -> k++
				:: else -> break
				od;
				k = 0;
				ok = 0
			fi;
			unlock_mine();
			check_inv()
		};
		if
		:: ok -> goto swait
		:: else -> goto done
		fi
	fi;

#ifdef CFG_GROW
	/* S7: thread 0, holding [1,1] (segment 0) or [1,2] (both), grows:
	 * a hull grows in a segment it holds ([1,1] -> [0,1]), a new part in
	 * a segment it does not hold ([1,1] -> [1,2] or [1,3]), or both */
	if
	:: t == 0 ->
		atomic {
			if
#ifdef CFG_WRAP
			:: true -> c = 0;	/* [0,0] grows */
				if
				:: d = 1
				:: d = 2
				:: d = 3
				fi
#else
			:: la[0] == 1 ->
				if
				:: c = 0; d = 1
				:: c = 1; d = 2
				:: c = 1; d = 3
				:: c = 0; d = 2
				:: c = 0; d = 3
				fi
			:: else ->
				if
				:: c = 0; d = 2
				:: c = 1; d = 3
				:: c = 0; d = 3
				fi
#endif
			fi;
			if
			:: kind = K_PLAIN
			:: kind = K_TIMED
			fi
		}
		/* the locks of every segment of the new range, ascending */
		atomic { glo = SEGLO(c, d); ghi = SEGHI(c, d) }
		LOCK(glo);
		if
		:: ghi > glo -> LOCK(ghi)
		:: else
		fi;
		atomic {
			/* the growth: in each segment, the units added there (the
			 * new hull less the old one: one piece with two units a
			 * segment), at the owner's seqnum s */
			s = SQ(0, lo); rd[GR] = rd[0]; sc = 0;
			g = glo;
			do
			:: g <= ghi ->
				gs = RHST(c, g); gl = RHLA(d, g);
				if
				:: pin[P(0, g)] && pst[P(0, g)] == gs && pla[P(0, g)] == gl ->
					gs = 255	/* nothing added here */
				:: pin[P(0, g)] && gs < pst[P(0, g)] -> gl = pst[P(0, g)] - 1
				:: pin[P(0, g)] && gs == pst[P(0, g)] && gl > pla[P(0, g)] ->
					gs = pla[P(0, g)] + 1
				:: !pin[P(0, g)]
				fi;
				if
				:: gs != 255 ->
					pst[P(GR, g)] = gs; pla[P(GR, g)] = gl; psq[P(GR, g)] = s;
#ifndef MUT_GROW_NO_RAISE
					/* every insertion raises the segment's counter
					 * past its seqnum (Lamport): later arrivals come
					 * after the growth */
					if
					:: gseq[g] <= s -> gseq[g] = s + 1
					:: else
					fi;
#endif
					pin[P(GR, g)] = 1; k = 0;
					j = 0;
					do
					:: j < NQ ->
						if
						:: j != GR && j != 0 && pin[P(j, g)] && MEET(j, GR, g) &&
						   CONFL(j, GR) ->
							if
							:: PREC_NG(j, GR, g) -> k++
							:: else -> add_blocker(j, g)	/* later waiter */
							fi
						:: else
						fi;
						j++
					:: else -> break
					od;
					j = 0;
					pcnt[P(GR, g)] = k;
					if
					:: k > 0 -> nwait[g]++
					:: else
					fi;
					sc = sc + k; k = 0
				:: else
				fi;
				g++
			:: else -> break
			od;
			g = 0; gs = 0; gl = 0;
			/* no blocker: merged at once, the locks still held; else
			 * marked (the default policy: never overtaken) and waits */
			if
			:: sc > 0 -> ho[GR] = !FIFO_TREE; ok = 0; lk[glo] = 0; lk[ghi] = 0
			:: else -> ok = 1
			fi;
			sc = 0;
			check_inv()
		}
gwait:		if
		:: ok || HELD(GR) ->	/* merge, under the locks */
			if
			:: ok -> skip
			:: else ->
				LOCK(glo);
				if
				:: ghi > glo -> LOCK(ghi)
				:: else
				fi
			fi;
			atomic {
				assert(HELD(GR));
				granted(GR);
				g = glo;
				do
				:: g <= ghi && pin[P(GR, g)] && pin[P(0, g)] ->
					/* the owner's hull takes the added units: a request
					 * that counted both counts it once */
					j = 0;
					do
					:: j < NQ ->
						if
						:: COUNTS(GR, j, g) && COUNTS(0, j, g) ->
#ifndef MUT_GROW_MERGE_NO_RECOUNT
							put_blocker(j, g)
#else
							skip
#endif
						:: else
						fi;
						j++
					:: else -> break
					od;
					j = 0;
					pst[P(0, g)] = (pst[P(GR, g)] < pst[P(0, g)] -> pst[P(GR, g)] : pst[P(0, g)]);
					pla[P(0, g)] = (pla[P(GR, g)] > pla[P(0, g)] -> pla[P(GR, g)] : pla[P(0, g)]);
					pin[P(GR, g)] = 0; pst[P(GR, g)] = 0; pla[P(GR, g)] = 0;
					psq[P(GR, g)] = 0;
					g++
				:: g <= ghi && pin[P(GR, g)] && !pin[P(0, g)] ->
					/* a new part: the growth's becomes the owner's */
					pin[P(0, g)] = 1; pst[P(0, g)] = pst[P(GR, g)];
					pla[P(0, g)] = pla[P(GR, g)]; psq[P(0, g)] = psq[P(GR, g)];
					pcnt[P(0, g)] = 0;
					pin[P(GR, g)] = 0; pst[P(GR, g)] = 0; pla[P(GR, g)] = 0;
					psq[P(GR, g)] = 0;
					g++
				:: g <= ghi && !pin[P(GR, g)] -> g++
				:: else -> break
				od;
				g = 0;
				st[GR] = 0; la[GR] = 0; rd[GR] = 0;
				st[0] = c; la[0] = d; lo = glo; hi = ghi;
				spn[0] = (hi > lo);
#ifndef MUT_MERGE_NO_HFLAG
				hflag[0] = spn[0];	/* it holds */
#else
				hflag[0] = 0;	/* mutant: the owner turned span is not marked held */
#endif
				shadow_check(0);
				lk[glo] = 0; lk[ghi] = 0;
				check_inv()
			}
		:: kind == K_TIMED && !HELD(GR) ->
			LOCK(glo);
			if
			:: ghi > glo -> LOCK(ghi)
			:: else
			fi;
			atomic {
				if
				:: TOT(GR) == 0 -> ok = 1	/* granted meanwhile: keep */
				:: else ->
					ho[GR] = 0; late[GR] = 0;	/* it leaves */
					g = 0;
					do
					:: g < NS && pin[P(GR, g)] -> remove_part(GR, g); g++
					:: g < NS && !pin[P(GR, g)] -> g++
					:: else -> break
					od;
					g = 0;
					st[GR] = 0; la[GR] = 0; rd[GR] = 0;
					assert(st[0] != c || la[0] != d);	/* unchanged */
					ok = 0;
					lk[glo] = 0; lk[ghi] = 0
				fi;
				check_inv()
			};
			if
			:: ok -> goto gwait
			:: else
			fi
		fi;
		ok = 0; c = 0; d = 0; s = 0; kind = 0; glo = 0; ghi = 0
	:: else
	fi;
#endif

#ifdef CFG_SHRINK
	/* S8: thread 0 (holding [1,4], all three segments) keeps a sub-range
	 * (range_lock_shrink(); the code: rl_seg_shrink()): the locks of
	 * every segment it holds, ascending, then one step under all of
	 * them: a part whose segment the new range leaves goes (a release
	 * walk there), a hull that shrinks releases its dropped units (the
	 * waiters there that counted it for them alone lose that blocker),
	 * and the ghost range narrows with it; a part that stays keeps its
	 * seqnum (its place) */
	if
	:: t == 0 ->
		atomic {
			if
			:: ns = 2; nl = 4	/* the first part goes */
			:: ns = 1; nl = 3	/* the last part goes */
			:: ns = 3; nl = 4	/* the first goes; the middle hull shrinks */
			:: ns = 1; nl = 2	/* the last goes; the middle hull shrinks */
			:: ns = 2; nl = 3	/* the middle alone: one part left */
			:: ns = 3; nl = 3	/* within the middle hull: one part */
			fi
		}
#ifdef MUT_SHRINK_DESCENDING
		lock_mine_descending();
#else
		lock_mine();
#endif
		atomic {
			/* what each part was counted for, by whom (4 bits a
			 * segment), before anything changes */
			d_step {
				cm = 0; k = lo;
				do
				:: k <= hi ->
					j = 0;
					do
					:: j < NQ ->
						if
						:: COUNTS(t, j, k) -> cm = cm | (1 << (4 * k + j))
						:: else
						fi;
						j++
					:: else -> break
					od;
					k++
				:: else -> break
				od;
				j = 0; k = lo
			}
			/* the parts change: out, or a smaller hull */
			do
			:: k <= hi ->
				if
				:: !(ns <= 2 * k + 1 && 2 * k <= nl) ->
#ifndef MUT_SHRINK_KEEPS_PART
					assert(pcnt[P(t, k)] == 0);	/* held */
					pin[P(t, k)] = 0; pst[P(t, k)] = 0;
					pla[P(t, k)] = 0; psq[P(t, k)] = 0
#else
					skip	/* mutant: the part stays behind */
#endif
				:: else ->
					pst[P(t, k)] = (ns > 2 * k -> ns : 2 * k);
					pla[P(t, k)] = (nl < 2 * k + 1 -> nl : 2 * k + 1)
				fi;
				k++
			:: else -> break
			od;
			/* the ghost range narrows in the same step */
			st[t] = ns; la[t] = nl;
			/* the release walks: a waiter that counted a part and no
			 * longer does loses that blocker (and may be granted) */
			k = lo;
			do
			:: k <= hi ->
				j = 0;
				do
				:: j < NQ ->
					if
					:: (cm & (1 << (4 * k + j))) && !COUNTS(t, j, k) &&
					   SHRINK_WALKS(t, k) -> put_blocker(j, k)
					:: else
					fi;
					j++
				:: else -> break
				od;
				k++
			:: else -> break
			od;
			j = 0; cm = 0;
			unlock_mine();
			lo = ns / 2; hi = nl / 2; ns = 0; nl = 0;
			check_inv()
		}
	:: else
	fi;
#endif

	/* unlock: one segment at a time, ascending (S4) */
	atomic { incs[t] = 0; rel[t] = 1 }
	k = lo;
	do
	:: k <= hi ->
		LOCK(k);
		atomic {
			if
			:: pin[P(t, k)] -> remove_part(t, k)
			:: else		/* only the NO_MIDDLE_PART mutant */
			fi;
			lk[k] = 0;
			check_inv()
		};
		k++
	:: else -> break
	od;
done:	skip;
	d_step {
		assert(!INR(t) && !incs[t]);
		rel[t] = 0; rd[t] = 0; st[t] = 0; la[t] = 0; ho[t] = 0; el[t] = 0;
		spn[t] = 0; hflag[t] = 0;
		late[t] = 0; arr[t] = 0; k = 0; lo = 0; hi = 0; kind = 0; ok = 0; mk = 0; s = 0
	}
}

init
{
	atomic {
#if defined(CFG_GROW) && defined(CFG_WRAP)
		/* wrapping stripes: thread 0 holds [0,0] and grows over
		 * [1,1], [2,2] or [3,3]; thread 1 spans: [2,3] (its part in
		 * segment 0 is waited for first) or [1,2], or holds [2,2];
		 * thread 2 holds or waits in one segment, or spans [1,3] */
		rmask[0] = 1; fmd[0] = ANY; wk[0] = K_PLAIN;
		rmask[1] = 8 | 16 | 32; fmd[1] = ANY; wk[1] = K_PLAIN;
		rmask[2] = 4 | 64 | 512; fmd[2] = ANY; wk[2] = K_PLAIN | K_TIMED;
#elif defined(CFG_GROW)
		/* thread 0: [1,1] or [1,2], any mode, then grows */
		rmask[0] = 4 | 8; fmd[0] = ANY; wk[0] = K_PLAIN;
		/* thread 1: spanning [0,2] or [1,2], or in one segment */
		rmask[1] = 1 | 8 | 32 | 256; fmd[1] = ANY; wk[1] = K_PLAIN;
		/* thread 2: one segment or spanning, plain or timed */
		rmask[2] = 2 | 8 | 64; fmd[2] = ANY; wk[2] = K_PLAIN | K_TIMED;
#elif defined(CFG_SEG3)
		/* thread 0: a writer spanning all three segments, [1,4],
		 * plain or timed (a give-up with a part in the middle) */
		rmask[0] = 1024; fmd[0] = 0; wk[0] = K_PLAIN | K_TIMED;
#ifdef CFG_SHRINK
		wk[0] = K_PLAIN;	/* it holds, then shrinks */
#endif
		/* thread 1: two segments [3,4], the middle one [2,3], or all
		 * [0,5]; any mode, every call */
		rmask[1] = 2048 | 4096 | 8192; fmd[1] = ANY;
		wk[1] = K_PLAIN | K_TIMED | K_TRY;
#if defined(MUT_EARLY_RELEASE) || defined(MUT_HAND_OVER_HAND)
		wk[1] = K_PLAIN | K_TIMED;	/* (the mutants have no trylock) */
#endif
		/* thread 2: single-segment ranges, the middle one included */
		rmask[2] = 16 | 16384 | 32768; fmd[2] = ANY; wk[2] = K_PLAIN | K_TIMED;
#else
		/* thread 0: a spanning writer */
		rmask[0] = 8; fmd[0] = 0; wk[0] = K_PLAIN;
#ifdef MUT_OUT_OF_ORDER
		rmask[0] = 8 | 128;
#endif
		/* thread 1: spanning or not, any mode, every call */
		rmask[1] = 2 | 8 | 16 | 128 | 512; fmd[1] = ANY;
		wk[1] = K_PLAIN | K_TIMED | K_TRY;
#if defined(MUT_EARLY_RELEASE) || defined(MUT_HAND_OVER_HAND)
		wk[1] = K_PLAIN | K_TIMED;	/* (the mutants have no trylock) */
#endif
		/* thread 2: single-segment ranges, any mode, plain or timed */
		rmask[2] = 1 | 4 | 16 | 32; fmd[2] = ANY; wk[2] = K_PLAIN | K_TIMED;
#endif
		run thread(0);
		run thread(1);
		run thread(2)
	}
}
