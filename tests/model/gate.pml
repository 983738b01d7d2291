/* SPDX-License-Identifier: MIT */
/*
 * gate.pml -- a SPIN model of THE GATE of a segmented tree (the design
 * spec "the gate: one tree for every workload"; docs/model.md, "Gate"):
 * the user's tree's lock word (the TOP WORD) says where requests are --
 * SEG (2): in the segments; DRAIN (5, 7 with sleepers): one wide request
 * (the drainer) is closing the segments and waiting for them to empty;
 * anything else (PLAIN): in the plain tree, every segment CLOSED.  Written
 * BEFORE the code, at the level of the spec: the segments' and the plain
 * tree's own protocols are checked by segments.pml, rangelock.pml,
 * wordmode.pml; here a structure is an abstract reader/writer lock
 * (a request present in it waits until no conflicting request of the SAME
 * structure holds).  The gate must then keep the two structures apart.
 *
 * LEVEL.  A critical section under one segment's lock is one atomic step
 * (entry, close, reopen, leave of a part, grow into a segment); the top
 * word, `pending` and the futex queues are shared words changed by single
 * atomic steps (loads, CASes, exchanges), and every FUTEX_WAIT is a value
 * check and a sleep in one step, woken only by an explicit wake (a wake
 * that is never made leaves the sleeper asleep: an invalid end state).
 * The plain tree's internal lock IS the top word (the futex mutex of
 * tree_lock.c: 0/NE free, L, L|S; DRAIN has the LOCKED bit, so its
 * acquirers sleep on DRAIN|S), with its own sleepers (fq[]).  A busy retry
 * loop (a refused entry) is a guard that waits until what it read changed
 * (stuttering iterations omitted): a livelock becomes an invalid end state.
 *
 * MODEL STEP -> SPEC
 * ------------------
 * dispatch:        "Dispatch of an entering request": w = top word
 * segenter:        narrow, w == SEG: enter the segment under its lock,
 *                  refused if CLOSING or CLOSED -> segrefused: (retry)
 * drain:           wide, w == SEG: CAS SEG -> DRAIN, pending = 1 (the
 *                  guard), close g = 0..S-1 ascending (empty: CLOSED; else
 *                  CLOSING, pending++), pending-- (the guard), wait until
 *                  pending == 0 (FUTEX_WAIT on pending), DRAIN -> LOCKED
 *                  keeping S (5->1, 7->3), held in the empty plain tree,
 *                  internal lock released (wake one if S)
 * giveup:          deadline (timed drainer: before any close, after the
 *                  loop, instead of or after any sleep) or the trylock's
 *                  undo: reopen every segment (CLOSED or CLOSING -> OPEN),
 *                  pending = 0, top := SEG, wake all if it had S
 * spantry:         the trylock's fall-back: today's spanning trylock
 * plainpath:       w DRAIN or PLAIN != 0: tl_acquire() (refused on SEG:
 *                  back to dispatch), enter the plain tree, release
 * fastpath:        wide, w == 0: the word fast path CAS 0 -> FAST
 * switchback:      narrow, w == 0: CAS 0 -> LOCKED; then (the model's
 *                  fix) every segment's lock taken, CLOSED -> LOCKED,
 *                  ascending, top := SEG (exchange; wake all if it had
 *                  S), the segment locks released to 0: one step here.
 *                  -DDRAFT_SWITCH_LOCKED: the spec as written (reopen one
 *                  segment at a time, then the exchange);
 *                  -DDRAFT_SWITCH_DRAIN: the same under CAS 0 -> DRAIN
 * grow:            a held narrow request grows into the other segment:
 *                  dispatch by the top word; in the segments a CLOSED
 *                  segment is taken (CLOSING, pending++), never refused
 * leave:           dispatch by the top word: SEG/DRAIN -> each part out
 *                  (ascending, one step per segment lock); the leaver that
 *                  empties a CLOSING segment writes CLOSED and decrements
 *                  pending, waking the drainer at 0; else the plain tree
 *                  (fast release CAS FAST -> 0, or under the internal lock)
 * tl_acquire()     the plain tree's internal lock: 0/NE -> L (L|S after a
 *                  sleep), FAST -> displace (materialise) and take,
 *                  L/DRAIN -> set S, FUTEX_WAIT; SEG -> refused (a sleeper
 *                  refused PASSES THE WAKE ON: wake all; the model's fix,
 *                  -DDRAFT_NO_PASS_ON without it)
 *
 * THREADS (one script each)
 *   thread 0  the drainer: a wide writer, blocking, timed (gives up at
 *             any step) or trylock (-DDRAINER_BLOCK, -DDRAINER_TIMED:
 *             one kind); then (ROUNDS0 == 2, the default) maybe a narrow
 *             writer of segment 0 (which may find PLAIN and switch back)
 *   thread 1  a narrow writer of segment 0 or 1 (-DT1_SEG0: 0) that may
 *             grow into the other one while it holds (so during a drain)
 *   thread 2  a narrow reader or writer (-DT2_WRITER: a writer) of the
 *             last segment; -DT2_SPAN: or a wide asynchronous request
 *             (spanenter: the spanning path, no drain)
 * -DNSEG=3: three segments.  Checks off: -DNO_ORDER_CHECK,
 * -DNO_GUARD_CHECK, -DNO_MODE_CHECK.  -DBUSY_RETRY: refused entries as
 * busy loops (the cycle check, -DNP / pan -l).
 *
 * PROPERTIES (monitor: every reachable state; fin: end state)
 *   G1        the plain tree and the segments are never both non-empty
 *   EXCL      no two conflicting holders (across structures: a wide writer
 *             never holds with anyone; two writers of a segment)
 *   PIN       a present request's structure is the one the top word names
 *             (so a leave dispatched by the top word leaves where it
 *             entered; also asserted at the leave)
 *   MODE      top word PLAIN -> every segment CLOSED
 *   ORDER     no (non-grow) entry into a segment the active drainer
 *             has closed: the drainer waits only for requests present at
 *             its close, later ones wait behind it (asserted at the entry)
 *   GUARD     pending >= 1 while the drainer is closing (the guard), and
 *             at every grow into a CLOSED segment (but during a give-up,
 *             which clears CLOSING and pending after it)
 *   end       nothing present, pending 0, nobody asleep, top word SEG with
 *             every segment OPEN or PLAIN-free with every segment CLOSED;
 *             no invalid end state (a lost wake-up, a stalled entry, a
 *             deadlock between a drain and a grow)
 *
 * MUTANTS: MUT_NO_REFUSE_CLOSING, MUT_NO_REFUSE_CLOSED,
 * MUT_SWITCH_BACK_BUSY, MUT_DRAIN_NO_WAIT, MUT_NO_GUARD,
 * MUT_DRAIN_LOST_WAKE, MUT_GIVEUP_KEEPS_CLOSED, MUT_LEAVE_BY_RANGE,
 * MUT_GROW_REFUSED (docs/model.md says what catches each).
 * THE SPEC AS WRITTEN: -DDRAFT_SWITCH_LOCKED (switch back through LOCKED:
 * PIN fails), -DDRAFT_NO_PASS_ON (a woken sleeper refused on SEG does not
 * pass the wake on: a sleeper is left asleep).
 */

#ifndef NSEG
#define NSEG 2
#endif
#if NSEG != 2 && NSEG != 3
#error "NSEG must be 2 or 3"
#endif
#define N 3
#define ALLSEG ((1 << NSEG) - 1)
#ifndef ROUNDS0
#define ROUNDS0 2
#endif

/* ---- the top word (values of tree_lock.h) ---- */
#define T_FREE 0
#define T_L    1
#define T_SEG  2
#define T_LS   3
#define T_NE   4
#define T_DR   5
#define T_DRS  7
#define T_FAST 8	/* a fast value: a word holder (pointer | 5) */

#define SEGMODE(w)  ((w) == T_SEG || (w) == T_DR || (w) == T_DRS)
#define TL_BUSY(w)  ((w) == T_L || (w) == T_LS || (w) == T_DR || (w) == T_DRS)
#define HAS_S(w)    ((w) == T_LS || (w) == T_DRS)

#ifdef DRAFT_SWITCH_DRAIN
#define SB_VAL T_DR	/* a tried fix: CAS 0 -> DRAIN, reopen one by one */
#else
#define SB_VAL T_L	/* CAS 0 -> LOCKED */
#endif

/* ---- a segment's gate state ---- */
#define G_OPEN    0
#define G_CLOSING 1
#define G_CLOSED  2

#if defined(MUT_NO_REFUSE_CLOSING)
#define REFUSED(s) ((s) == G_CLOSED)
#elif defined(MUT_NO_REFUSE_CLOSED)
#define REFUSED(s) ((s) == G_CLOSING)
#else
#define REFUSED(s) ((s) != G_OPEN)
#endif

/* drainer's kinds */
#define K_BLOCK 0
#define K_TIMED 1
#define K_TRY   2

byte top = T_SEG;
byte gst[NSEG];
byte pending;
bit  dq;		/* the drainer asleep on pending */
bit  fq[N];		/* asleep on the top word */

byte pm[N];		/* segments where the request has a part (present) */
bit  inpl[N];		/* present in the plain tree */
bit  held[N];		/* holds (a waiting growth part aside) */
byte um[N];		/* units held: one per segment */
bit  wr[N];
bit  fast[N];		/* holds in the word (FAST) */

/* ghosts */
bit  dact;		/* a drain is active: CAS to DRAIN .. grant/give-up */
bit  dloop;		/* the drainer is closing (the guard is held) */
bit  dgive;		/* the drainer is giving up */
byte dvis;		/* segments the drainer closed (and not reopened) */
byte ndone;

#define BIT(x, b)   (((x) >> (b)) & 1)
#define SEGS_USED   (pm[0] | pm[1] | pm[2])
#define GEMPTY(g)   (BIT(SEGS_USED, g) == 0)
#define PLCNT       (inpl[0] + inpl[1] + inpl[2])
#define PRESENT_IN(g) (BIT(pm[0], g) | (BIT(pm[1], g) << 1) | (BIT(pm[2], g) << 2))

/* j conflicts with k's request over units m */
#define CF(j, k, m) ((j) != (k) && held[j] && (um[j] & (m)) && (wr[j] || wr[k]))
/* no conflicting holder of segment g over m's part in g */
#define SEG_OK(k, g, m) (!(BIT(pm[0], g) && CF(0, k, (m) & (1 << (g)))) && \
			 !(BIT(pm[1], g) && CF(1, k, (m) & (1 << (g)))) && \
			 !(BIT(pm[2], g) && CF(2, k, (m) & (1 << (g)))))
#define PL_OK(k, m) (!(inpl[0] && CF(0, k, m)) && !(inpl[1] && CF(1, k, m)) && \
		     !(inpl[2] && CF(2, k, m)))
#if NSEG == 2
#define ALL_SEG_OK(k, m) (SEG_OK(k, 0, m) && SEG_OK(k, 1, m))
#define ALL_CLOSED  (gst[0] == G_CLOSED && gst[1] == G_CLOSED)
#define ALL_OPEN    (gst[0] == G_OPEN && gst[1] == G_OPEN)
#else
#define ALL_SEG_OK(k, m) (SEG_OK(k, 0, m) && SEG_OK(k, 1, m) && SEG_OK(k, 2, m))
#define ALL_CLOSED  (gst[0] == G_CLOSED && gst[1] == G_CLOSED && gst[2] == G_CLOSED)
#define ALL_OPEN    (gst[0] == G_OPEN && gst[1] == G_OPEN && gst[2] == G_OPEN)
#endif

/* ---- properties ---- */
#define G1     (!(PLCNT > 0 && SEGS_USED != 0))
#define XCL(a, b) (!(held[a] && held[b] && (um[a] & um[b]) && (wr[a] || wr[b])))
#define EXCL   (XCL(0, 1) && XCL(0, 2) && XCL(1, 2))
#define PIN1(k) ((!inpl[k] || !SEGMODE(top)) && (pm[k] == 0 || SEGMODE(top)))
#define PIN    (PIN1(0) && PIN1(1) && PIN1(2))
#define MODE   (SEGMODE(top) || ALL_CLOSED)
#ifndef NO_GUARD_CHECK
#define GUARD  (!(dloop && pending == 0))
#else
#define GUARD  true
#endif
#ifdef NO_MODE_CHECK
#undef MODE
#define MODE true
#endif
#define INV (G1 && EXCL && PIN && MODE && GUARD && pending < 8)

/* run last: the highest pid, whose steps pan's search tries first, so
 * that a broken invariant is reported where it first breaks */
proctype monitor()
{
end_mon:
	atomic {
		!INV ->
		assert(G1);
		assert(EXCL);
		assert(PIN);
		assert(MODE);
		assert(GUARD);
		assert(pending < 8)
	}
}

active proctype fin()
{
end_fin:
	atomic {
		ndone == N ->
		assert(SEGS_USED == 0 && PLCNT == 0);
		assert(!held[0] && !held[1] && !held[2]);
		assert(pending == 0 && !dq);
		assert(!fq[0] && !fq[1] && !fq[2]);
		assert((top == T_SEG && ALL_OPEN) || (top == T_FREE && ALL_CLOSED))
	}
}

inline wake1()
{
	atomic {
		if
		:: fq[0] -> fq[0] = 0
		:: fq[1] -> fq[1] = 0
		:: fq[2] -> fq[2] = 0
		:: else
		fi
	}
}

inline wake_all()
{
	atomic { fq[0] = 0; fq[1] = 0; fq[2] = 0 }
}

/* tree_lock_acquire() on the plain tree: res = 1 taken, 0 refused (SEG) */
inline tl_acquire()
{
	mine = T_L; slept = 0; res = 0;
	do
	:: atomic { (top == T_FREE || top == T_NE) -> top = mine; res = 1; break }
	:: atomic { top == T_FAST ->	/* displace: the word holder into the tree */
		fast[0] = 0; fast[1] = 0; fast[2] = 0; top = mine; res = 1; break }
	:: atomic { top == T_SEG -> res = 0; break }
	:: atomic { TL_BUSY(top) -> top = top | 2; dv = top }	/* CAS to S */
		/* FUTEX_WAIT(dv): asleep, or EAGAIN */
		atomic { if :: top == dv -> fq[i] = 1 :: else fi }
		(fq[i] == 0);
		dv = 0; mine = T_LS; slept = 1
	od;
#ifndef DRAFT_NO_PASS_ON
	/* refused after a sleep: the wake it consumed may have been meant for
	 * the next sleeper (a release wakes one): pass it on */
	if :: !res && slept -> wake_all() :: else fi;
#endif
	mine = 0; slept = 0
}

/* release of the plain tree's internal lock (tree_lock_release()) */
inline tl_release()
{
	atomic {
		assert(top == T_L || top == T_LS);
		ws = (top == T_LS);
		top = (PLCNT > 0 -> T_NE : T_FREE)
	}
	if :: ws -> wake1(); ws = 0 :: else fi
}

proctype thr(byte i)
{
	byte w, g, g2, m, nm, kind, rnd, mine, dv;
	bit wide, span, ws, res, slept, grown, ow;

next:
	/* ---- the script: choose the request ---- */
	atomic {
		wide = 0; span = 0; kind = K_BLOCK; grown = 0;
		if
		:: i == 0 && rnd == 0 ->
			wide = 1; wr[i] = 1; m = ALLSEG;
#if defined(DRAINER_BLOCK)
			kind = K_BLOCK
#elif defined(DRAINER_TIMED)
			kind = K_TIMED
#else
			if :: kind = K_BLOCK :: kind = K_TIMED :: kind = K_TRY fi
#endif
		:: i == 0 && rnd == 1 && ROUNDS0 >= 2 ->	/* narrow, segment 0 */
			wr[i] = 1; m = 1; g = 0
		:: i == 0 && rnd == 1 -> goto done
		:: i == 1 && rnd == 0 ->
			wr[i] = 1;
#ifdef T1_SEG0
			g = 0
#else
			if :: g = 0 :: g = 1 fi
#endif
			; m = 1 << g
		:: i == 2 && rnd == 0 ->
			g = NSEG - 1; m = 1 << g;
#ifdef T2_WRITER
			wr[i] = 1
#else
			if :: wr[i] = 1 :: wr[i] = 0 fi
#endif
#ifdef T2_SPAN
			/* or a wide asynchronous request: the spanning path */
			; if :: true :: wide = 1; span = 1; m = ALLSEG fi
#endif
		:: else -> goto done
		fi
	}

dispatch:
	atomic {	/* one load of the top word; the choice is local */
		w = top;
		if
		:: w == T_SEG && !wide -> w = 0; goto segenter
		:: w == T_SEG && wide && !span -> w = 0; goto drain
		:: w == T_SEG && span -> w = 0; goto spanenter
		:: w == T_DR || w == T_DRS -> w = 0; goto plainpath
#ifndef MUT_SWITCH_BACK_BUSY
		:: w == T_FREE && !wide -> goto switchback
#else
		/* mutant: a plain tree free of its lock, empty or not */
		:: (w == T_FREE || w == T_NE || w == T_FAST) && !wide -> goto switchback
#endif
		:: w == T_FREE && wide && !span -> w = 0; goto fastpath
		:: else -> w = 0; goto plainpath
		fi
	}

	/* ---- narrow request, SEG: enter the segment under its lock ---- */
segenter:
	atomic {
		if
		:: REFUSED(gst[g]) -> goto segrefused
		:: else ->
#ifdef MUT_NO_REFUSE_CLOSED
			if :: gst[g] == G_CLOSED -> gst[g] = G_OPEN :: else fi;
#endif
#ifndef NO_ORDER_CHECK
			/* ORDER: no entry into a segment the drainer closed
			 * (it waits only for those present at the close) */
			assert(!(dact && BIT(dvis, g)));
#endif
			pm[i] = 1 << g;
			if :: SEG_OK(i, g, m) -> held[i] = 1; um[i] = m :: else fi
		fi
	}
	if
	:: held[i]
	:: else -> atomic { SEG_OK(i, g, m) -> held[i] = 1; um[i] = m }
	fi;
	goto holding;
segrefused:
	/* refused: back to the dispatch.  Safety runs: the passes that would
	 * read the same values again are omitted (a guard), so a livelock is
	 * an invalid end state; -DBUSY_RETRY (the cycle check): the busy loop
	 * itself, so a livelock is a non-progress cycle */
#ifndef BUSY_RETRY
	(top != T_SEG || gst[g] == G_OPEN);
#endif
	goto dispatch;

	/* ---- a wide asynchronous request, SEG: the spanning path (no
	 * drain), every segment checked under all their locks ---- */
spanenter:
	atomic {
		if
		:: REFUSED(gst[0]) || REFUSED(gst[1])
#if NSEG == 3
		   || REFUSED(gst[2])
#endif
			-> goto spanrefused
		:: else ->
#ifndef NO_ORDER_CHECK
			assert(!(dact && dvis != 0));	/* ORDER */
#endif
			pm[i] = ALLSEG;
			if :: ALL_SEG_OK(i, m) -> held[i] = 1; um[i] = m :: else fi
		fi
	}
	if
	:: held[i]
	:: else -> atomic { ALL_SEG_OK(i, m) -> held[i] = 1; um[i] = m }
	fi;
	goto holding;
spanrefused:
#ifndef BUSY_RETRY
	(top != T_SEG || ALL_OPEN);
#endif
	goto dispatch;

	/* ---- the plain path ---- */
plainpath:
	tl_acquire();
	if
	:: !res -> goto dispatch
	:: else -> res = 0
	fi;
	atomic {
		inpl[i] = 1;
		if :: PL_OK(i, m) -> held[i] = 1; um[i] = m :: else fi
	}
	tl_release();
	if
	:: held[i]
	:: else -> atomic { PL_OK(i, m) -> held[i] = 1; um[i] = m }
	fi;
	goto holding;

	/* ---- wide, PLAIN and free: the word fast path ---- */
fastpath:
	if
	:: atomic { top == T_FREE ->
		top = T_FAST; inpl[i] = 1; held[i] = 1; fast[i] = 1; um[i] = m }
		goto holding
	:: else -> goto dispatch
	fi;

	/* ---- narrow, PLAIN and free: switch back ---- */
switchback:
	if
	:: atomic { top == w -> top = SB_VAL; w = 0 }
	:: else -> goto dispatch
	fi;
#if defined(DRAFT_SWITCH_LOCKED) || defined(DRAFT_SWITCH_DRAIN)
	/* the spec as written: reopen one segment lock at a time, then the
	 * exchange to SEG */
	g2 = 0;
	do
	:: g2 < NSEG ->
		atomic {	/* as written: "its word CLOSED -> 0" */
			if :: gst[g2] == G_CLOSED -> gst[g2] = G_OPEN :: else fi
		}
		g2++
	:: else -> break
	od;
	g2 = 0;
	atomic { ws = HAS_S(top); top = T_SEG };
#else
	/* the fix: every segment's lock taken (CLOSED -> LOCKED), ascending,
	 * then top := SEG, then the segment locks released (to 0): one step
	 * here, as nobody reads a segment's state without its lock */
	atomic {
#if !defined(MUT_SWITCH_BACK_BUSY) && !defined(NO_MODE_CHECK)
		assert(ALL_CLOSED);	/* MODE: PLAIN, so all CLOSED */
#endif
		gst[0] = G_OPEN; gst[1] = G_OPEN;
#if NSEG == 3
		gst[2] = G_OPEN;
#endif
		ws = HAS_S(top); top = T_SEG
	}
#endif
	if :: ws -> wake_all(); ws = 0 :: else fi;
	goto dispatch;

	/* ---- wide, SEG: drain ---- */
drain:
	if
	:: atomic { top == T_SEG ->
		top = T_DR; dact = 1; dloop = 1; dvis = 0;
#ifndef MUT_NO_GUARD
		pending = 1
#else
		pending = 0
#endif
	   }
	:: else -> goto dispatch
	fi;
	g2 = 0;
	do
	:: g2 < NSEG ->
		if
		:: kind == K_TIMED -> goto giveup	/* the deadline, at any step */
		:: true
		fi;
		atomic {	/* under g2's lock */
			if
			:: GEMPTY(g2) -> gst[g2] = G_CLOSED
			:: else -> gst[g2] = G_CLOSING; pending++
			fi;
			dvis = dvis | (1 << g2)
		}
		g2++
	:: else -> break
	od;
	g2 = 0;
	atomic {
		dloop = 0;
#ifndef MUT_NO_GUARD
		pending--	/* the guard */
#endif
	}
	if
	:: kind == K_TRY ->
		if
		:: atomic { pending == 0 -> skip }
		:: else -> goto giveup	/* the undo, then the spanning trylock */
		fi
	:: else
	fi;
#ifndef MUT_DRAIN_NO_WAIT
	do
	:: atomic { pending == 0 -> skip }; break
	:: kind == K_TIMED -> goto giveup
	:: atomic { pending != 0 -> dv = pending }
		/* FUTEX_WAIT(&pending, dv) */
		atomic { if :: pending == dv -> dq = 1 :: else fi; dv = 0 }
		if
		:: dq == 0
		:: kind == K_TIMED -> dq = 0; goto giveup	/* timeout asleep */
		fi
	od;
#endif
	/* granted: DRAIN -> LOCKED keeping S; held in the empty plain tree */
	atomic {
		assert(top == T_DR || top == T_DRS);
		assert(PLCNT == 0);
		top = top - 4;
		dact = 0; dvis = 0;
		inpl[i] = 1; held[i] = 1; um[i] = m
	}
	tl_release();
	goto holding;

giveup:
	dgive = 1; dact = 0;	/* the drain is abandoned: no order to keep */
	g2 = 0;
	do
	:: g2 < NSEG ->
		atomic {	/* under g2's lock, a CLOSED word accepted */
#ifdef MUT_GIVEUP_KEEPS_CLOSED
			if :: gst[g2] == G_CLOSING -> gst[g2] = G_OPEN :: else fi;
#else
			gst[g2] = G_OPEN;
#endif
			dvis = dvis & ~(1 << g2)
		}
		g2++
	:: else -> break
	od;
	g2 = 0;
	atomic { pending = 0; dloop = 0 }
	atomic {
		assert(top == T_DR || top == T_DRS);
		ws = HAS_S(top); top = T_SEG; dact = 0; dgive = 0
	}
	if :: ws -> wake_all(); ws = 0 :: else fi;
	if
	:: kind == K_TRY -> goto spantry
	:: else -> goto finished	/* ETIMEDOUT */
	fi;

	/* ---- the trylock's fall-back: today's spanning trylock ---- */
spantry:
	atomic {
		if
		:: top == T_SEG && ALL_OPEN ->
			if
			:: ALL_SEG_OK(i, m) -> pm[i] = ALLSEG; held[i] = 1; um[i] = m
			:: else	/* busy: EBUSY */
			fi
		:: else -> assert(false)	/* only thread 0 drains */
		fi
	}
	if
	:: held[i] -> goto holding
	:: else -> goto finished
	fi;

	/* ---- holding: thread 1 may grow into the other segment ---- */
holding:
	w = 0; res = 0;	/* dead */
	if
	:: i == 1 && !grown -> goto grow
	:: true
	fi;

leave:
	atomic {	/* dispatch by the top word */
		w = top;
#ifdef MUT_LEAVE_BY_RANGE
		w = T_SEG;	/* mutant: by the request's range (segments) */
#endif
		if
		:: SEGMODE(w) -> w = 0; goto leaveseg
		:: else -> w = 0; goto leaveplain
		fi
	}
leaveseg:
	assert(!inpl[i] && pm[i] != 0);	/* leaves where it entered */
		g2 = 0;
		do
		:: g2 < NSEG ->
			if
			:: BIT(pm[i], g2) ->
				atomic {	/* under g2's lock */
					pm[i] = pm[i] & ~(1 << g2);
					um[i] = um[i] & ~(1 << g2);
					held[i] = (pm[i] != 0);
					if
					:: GEMPTY(g2) && gst[g2] == G_CLOSING ->
						gst[g2] = G_CLOSED; pending--;
						ow = (pending == 0)
					:: else
					fi
				}
				if
				:: ow ->
#ifndef MUT_DRAIN_LOST_WAKE
					atomic { dq = 0; ow = 0 }	/* FUTEX_WAKE */
#else
					ow = 0
#endif
				:: else
				fi
			:: else
			fi;
			g2++
		:: else -> break
		od;
		g2 = 0;
	goto finished;
leaveplain:
	assert(inpl[i] && pm[i] == 0);	/* leaves where it entered */
	if
	:: atomic { fast[i] && top == T_FAST ->
		top = T_FREE; inpl[i] = 0; held[i] = 0; fast[i] = 0; um[i] = 0 }
	:: else ->
		tl_acquire();
		assert(res); res = 0;
		atomic { inpl[i] = 0; held[i] = 0; fast[i] = 0; um[i] = 0 }
		tl_release()
	fi;
	goto finished;

	/* ---- grow of a held narrow request into the other segment ---- */
grow:
	atomic {	/* dispatch by the top word */
		grown = 1;
		g2 = 1 - g;
		nm = m | (1 << g2);
		w = top;
		if
		:: SEGMODE(w) -> w = 0; goto growseg
		:: else -> w = 0; goto growplain
		fi
	}
growseg:
		atomic {	/* under the locks of g and g2 */
			assert(pm[i] == (1 << g) && !inpl[i]);
			if
			:: gst[g2] == G_CLOSED ->
#ifdef MUT_GROW_REFUSED
				goto growrefused;
#endif
#ifndef NO_GUARD_CHECK
				/* the spec's "pending >= 1 then" (not during a
				 * give-up: it clears CLOSING and pending after) */
				assert(pending >= 1 || dgive);
#endif
				gst[g2] = G_CLOSING; pending++
			:: else
			fi;
			pm[i] = pm[i] | (1 << g2)
		}
		atomic { SEG_OK(i, g2, nm) -> um[i] = nm; g2 = 0 }
		goto leave;
growplain:
	assert(inpl[i] && pm[i] == 0);
	tl_acquire();
	assert(res); res = 0;
	tl_release();
	atomic { PL_OK(i, nm) -> um[i] = nm; g2 = 0 }
	goto leave;
#ifdef MUT_GROW_REFUSED
growrefused:
	/* mutant: the grow waits for the gate to open */
#ifndef BUSY_RETRY
	(top == T_SEG && gst[g2] == G_OPEN);
#endif
	goto grow;
#endif

finished:
	atomic {
		g = 0; m = 0; nm = 0; w = 0; wr[i] = 0; kind = 0; wide = 0; span = 0;
		rnd++
	}
	goto next;
done:
	atomic { ndone++ }
}

init
{
	atomic {
		run thr(0);
		run thr(1);
		run thr(2);
		run monitor()
	}
}
