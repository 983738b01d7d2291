/* SPDX-License-Identifier: MIT */
/*
 * handshake_wm.pml -- the reader fast path's Dekker handshake (issue 13)
 * under WEAK MEMORY: every thread has an explicit store buffer.  The
 * protocol is the one of src/fast_read.[ch] (publish -> fence -> check the
 * bias; clear the bias -> fence -> scan the slots -> claim by CAS ->
 * materialise); docs/model.md ("The handshake under weak memory") explains
 * the model, docs/design.md ("The reader fast path's fences") the fences.
 *
 * MEMORY.  mem[] is the shared memory.  A plain store of thread t goes into
 * buf[t] and reaches mem[] only when the flusher process writes it out,
 * at any later time.  A thread's loads see its own newest buffered store to
 * that location first (store forwarding), else mem[].
 *   default  TSO (x86): buf[t] is a FIFO; only its oldest store is flushed.
 *            Store -> load reordering: a load passes an older buffered store.
 *   -DPSO    per-location buffers flushed in any order (ARM/POWER-like):
 *            store -> store reordering as well (two stores of one thread
 *            to the same location still leave in order: coherence).
 *   -DSC     no buffering: stores go to mem[] at once (what rangelock.pml
 *            assumes); the fence mutants pass here, which is the point.
 * FENCE(t)   a full fence: thread t waits until buf[t] is empty.
 * RELEASE(t) the release half of a seq_cst store/RMW: earlier stores leave
 *            first (a no-op under TSO, whose buffer is a FIFO).
 * RMWs       (CAS, exchange) read and write mem[] in one atomic step, after
 *            draining the thread's buffer: the C code's RMWs on the slot
 *            state and on tree_lock are locked instructions on x86 and
 *            seq_cst (or acquire/release) RMWs on AArch64.  The PUBLISH
 *            exchange is the exception, on purpose: it is modelled as its
 *            parts, RELEASE; store; FENCE, so that the mutants can take the
 *            parts away.
 * Loads are performed in program order (no load -> load or load -> store
 * reordering: those are what acquire/release forbid; docs/design.md).
 *
 * MODEL STEP -> src/
 * ==================
 * here                           src/ (fast_read.h, fast_read.c, calls.c, protocol.c)
 * -----------------------------  ---------------------------------------------
 * reader: LOAD(BIAS) first        enter(): relaxed look at BIASED
 * reader: LOAD(SLOT(i)) first     fast_read_acquire(): relaxed look at the
 *                                 slot: not IDLE (still held) -> old path
 * reader: STORE(REQ(i))           fast_read_acquire(): s->req
 * reader: RELEASE; STORE(SLOT);   fast_read_acquire(): atomic_exchange(state,
 *         FENCE                   T|PUB, seq_cst)
 * reader: LOAD(BIAS) again        fast_read_acquire(): seq_cst load of flags
 * reader: CAS(SLOT, PUB, IDLE)    back out (FAST_READ_NO), or fails: a revoker
 *                                 took it (FAST_READ_MATERIALISED), then
 *                                 tree_lock; tree_unlock; held in the tree
 * UNLOCK_READ()                   fast_read_release(): CAS PUB -> IDLE
 *                                 [release]; failed: unlock through the tree,
 *                                 rl_slot_unmaterialise() (MAT -> IDLE)
 * reader: slow:                   the old path (abstract: a tree reader is
 *                                 admitted when no writer is in the tree);
 *                                 -DREBIAS: it may set BIASED (re-biasing)
 * writer: STORE(BIAS, 0); FENCE   revocation: seq_cst store of flags
 * writer: scan                    rl_take_published(): seq_cst load of each
 *                                 state, CAS PUB -> MAT [acquire], then read
 *                                 s->req and materialise (intree[i]++)
 * writer: wtree, wait             the writer in the tree waits for the
 *                                 materialised and tree readers (abstract)
 *
 * THREADS: readers 0..NR-1 (NR = 2), each with its own slot, RROUNDS read
 * locks each; the writer (thread NR), WROUNDS write locks.  -DXUNLOCK: the
 * unlocker process unlocks reader 0's requests (a cross-thread unlock)
 * while reader 0 goes on to its next one.  The tree starts BIASED.
 * Tree-lock-protected data (intree, wtree) is written under tree_lock,
 * directly to memory (the lock's acquire/release orders it).
 *
 * PROPERTIES (assertions):
 *   exclusion: never a reader (fast-held, materialised, or held in the
 *              tree) and the writer in their critical sections at once;
 *   the writer claims a slot (PUB -> MAT) only while its owner is between
 *              its publication and its release: no reader is left
 *              published after it returned "not held" (backed out);
 *   the request the writer reads after winning a slot is the one that
 *              was published there (not a stale one);
 *   at the end: every slot IDLE in memory, no reader in the tree; and no
 *              invalid end state (a writer waiting for ever for a reader).
 *
 * MUTANTS (each must make pan report an error; docs/model.md):
 *   MUT_NO_READER_FENCE    publish without the full fence (a release store)
 *   MUT_NO_WRITER_FENCE    clear BIASED without the full fence
 *   MUT_NO_RECHECK         the reader trusts its first look at BIASED and
 *                          does not check it again after publishing
 *   MUT_SCAN_BEFORE_CLEAR  the writer scans the slots, then clears BIASED
 *   MUT_PUBLISH_RELAXED    publish without the release half (-DPSO: the
 *                          slot can be seen before the request pointer)
 *   MUT_NO_BACKOUT         a reader that saw BIASED clear leaves its slot
 *                          published and goes the old way
 *   MUT_NO_SLOT_LOOK       the reader publishes without looking at its
 *                          slot first (-DXUNLOCK: a cross-thread unlock of
 *                          its previous request then releases the new one)
 */

#define NR 2		/* the flusher and the writer's wait name the threads */
#ifndef RROUNDS
#define RROUNDS 1
#endif
#ifndef WROUNDS
#define WROUNDS 1
#endif
#define W NR			/* the writer's thread index */
#define U (NR + 1)		/* the unlocker's (-DXUNLOCK; it never stores) */
#ifdef XUNLOCK
#define NT (NR + 2)
#else
#define NT (NR + 1)
#endif

/* locations */
#define BIAS     0		/* the tree's BIASED bit */
#define SLOT(i)  (1 + (i))	/* slot i's state (reader i's slot) */
#define REQ(i)   (1 + NR + (i))	/* slot i's req (and range) fields */
#define NLOC     (1 + 2 * NR)

/* slot states (the tree pointer is implicit: one tree) */
#define IDLE 0
#define PUB  1
#define MAT  2

#define BUFSZ 2

byte mem[NLOC];

typedef sbuf {
	byte loc[BUFSZ];
	byte val[BUFSZ];
	byte n
};
sbuf buf[NR + 2];

bit tl;			/* tree_lock */
bit wtree;		/* the writer's request is in the tree */
byte intree[NR];	/* reader i's requests in the tree (materialised, slow) */

/* ghosts */
byte rcs;		/* readers in their critical sections */
bit wcs;		/* the writer in its critical section */
bit fast[NR];		/* reader i between publication and release */
byte rid[NR];		/* the request reader i published last */
byte ndone;
#ifdef XUNLOCK
chan handoff = [RROUNDS] of { bit };	/* reader 0's held requests */
#endif

/* ---- memory ---- */

inline LOAD(t, l, v)
{
	d_step {
		if
		:: buf[t].n == 2 && buf[t].loc[1] == l -> v = buf[t].val[1]
		:: else ->
			if
			:: buf[t].n >= 1 && buf[t].loc[0] == l -> v = buf[t].val[0]
			:: else -> v = mem[l]
			fi
		fi
	}
}

#ifdef SC
inline STORE(t, l, v) { mem[l] = v }
#else
inline STORE(t, l, v)
{
	assert(buf[t].n < BUFSZ);
	buf[t].loc[buf[t].n] = l;
	buf[t].val[buf[t].n] = v;
	buf[t].n++
}
#endif

#define FENCE(t) (buf[t].n == 0)
#ifdef PSO
#define RELEASE(t) FENCE(t)
#else
#define RELEASE(t) skip
#endif

/* CAS on mem[], after draining the buffer; ok = 1 on success */
inline CAS(t, l, old, new, ok)
{
	atomic {
		buf[t].n == 0;
		if
		:: mem[l] == old -> mem[l] = new; ok = 1
		:: else -> ok = 0
		fi
	}
}

inline TREE_LOCK(t)   { atomic { buf[t].n == 0 && tl == 0 -> tl = 1 } }
inline TREE_UNLOCK(t) { atomic { buf[t].n == 0 -> tl = 0 } }

/* The flusher: writes out some thread's buffered store, at any time. */
#define FLUSH0(t)							\
	:: d_step { buf[t].n > 0 ->					\
		mem[buf[t].loc[0]] = buf[t].val[0];			\
		buf[t].loc[0] = buf[t].loc[1]; buf[t].val[0] = buf[t].val[1]; \
		buf[t].loc[1] = 0; buf[t].val[1] = 0; buf[t].n-- }
#define FLUSH1(t)							\
	:: d_step { buf[t].n == 2 && buf[t].loc[0] != buf[t].loc[1] ->	\
		mem[buf[t].loc[1]] = buf[t].val[1];			\
		buf[t].loc[1] = 0; buf[t].val[1] = 0; buf[t].n = 1 }

#ifndef SC
active proctype flusher()
{
end:	do
	FLUSH0(0)
	FLUSH0(1)
	FLUSH0(2)
#ifdef PSO
	FLUSH1(0)
	FLUSH1(1)
	FLUSH1(2)
#endif
	od
}
#endif

/* ---- the reader ---- */

/* Thread t unlocks a read request of reader rd: held = 1 if it took the
 * slot (fast, or materialised), else it is in the tree. */
inline UNLOCK_READ(t, rd, held, res)
{
	if
	:: held ->
		atomic {		/* release CAS PUB -> IDLE */
			buf[t].n == 0;
			if
			:: mem[SLOT(rd)] == PUB -> mem[SLOT(rd)] = IDLE; fast[rd] = 0; res = 1
			:: else -> res = 0
			fi
		}
		if
		:: res
		:: else ->		/* materialised: through the tree */
			TREE_LOCK(t);
			atomic {	/* rl_slot_unmaterialise(): MAT -> IDLE */
				buf[t].n == 0;
				assert(mem[SLOT(rd)] == MAT);
				mem[SLOT(rd)] = IDLE;
				fast[rd] = 0	/* the owner may publish again */
			}
			intree[rd]--;	/* remove it from the tree */
			TREE_UNLOCK(t)
		fi
	:: else ->
		TREE_LOCK(t);
		intree[rd]--;
		TREE_UNLOCK(t)
	fi
}

proctype reader(byte i)
{
	byte r, b, v;
	bit ok, slot;

	for (r : 1 .. RROUNDS) {
		slot = 0;
		LOAD(i, BIAS, b);		/* enter(): relaxed look */
#ifndef MUT_NO_SLOT_LOOK
		LOAD(i, SLOT(i), v);		/* our slot: relaxed look */
#else
		v = IDLE;
#endif
		if
		:: b == 1 && v == IDLE ->
			STORE(i, REQ(i), r);	/* s->req */
#ifndef MUT_PUBLISH_RELAXED
			RELEASE(i);		/* PUBLISH: exchange, seq_cst ... */
#endif
			d_step { STORE(i, SLOT(i), PUB); fast[i] = 1; rid[i] = r };
#ifndef MUT_NO_READER_FENCE
			FENCE(i);		/* ... the full fence */
#endif
#ifndef MUT_NO_RECHECK
			LOAD(i, BIAS, b);	/* CHECK: seq_cst load */
#endif
			if
			:: b == 1 -> slot = 1	/* held fast */
			:: else ->
#ifdef MUT_NO_BACKOUT
				ok = 1;
#else
				CAS(i, SLOT(i), PUB, IDLE, ok);	/* back out */
#endif
				if
				:: ok ->		/* "not held": the old path */
					fast[i] = 0;
					goto slow
				:: else ->		/* a revoker won: MAT */
					TREE_LOCK(i);
					TREE_UNLOCK(i);
					slot = 1	/* held through the tree */
				fi
			fi
		:: else ->
slow:			TREE_LOCK(i);
			if
			:: wtree ->
				TREE_UNLOCK(i);
				!wtree;
				goto slow
			:: else ->
				intree[i]++;
#ifdef REBIAS
				LOAD(i, BIAS, b);
				if
				:: b == 0 -> STORE(i, BIAS, 1)	/* countdown at 0 */
				:: skip
				fi;
#endif
				TREE_UNLOCK(i)
			fi
		fi;

		/* the critical section */
		d_step { rcs++; assert(wcs == 0) };
#ifdef XUNLOCK
		if
		:: i == 0 -> handoff!slot	/* another thread unlocks it */
		:: else ->
#endif
			rcs--;
			UNLOCK_READ(i, i, slot, ok)
#ifdef XUNLOCK
		fi
#endif
	}
	ndone++
}

#ifdef XUNLOCK
/* Unlocks reader 0's requests, in another thread (the request remembers
 * its slot); reader 0 goes on meanwhile. */
proctype unlocker()
{
	byte r;
	bit ok, slot;

	for (r : 1 .. RROUNDS) {
		handoff?slot;
		rcs--;
		UNLOCK_READ(U, 0, slot, ok)
	}
	ndone++
}
#endif

/* ---- the writer ---- */

inline SCAN()
{
	for (j : 0 .. NR - 1) {
		LOAD(W, SLOT(j), v);		/* seq_cst load */
		if
		:: v == PUB ->
			CAS(W, SLOT(j), PUB, MAT, ok);	/* [acquire] */
			if
			:: ok ->
				/* a reader left published after "not held"? */
				assert(fast[j]);
				LOAD(W, REQ(j), v);	/* only now: s->req */
				assert(v == rid[j]);
				intree[j]++	/* materialise: a held reader */
			:: else
			fi
		:: else
		fi
	}
}

proctype writer()
{
	byte k, j, v, b;
	bit ok;

	for (k : 1 .. WROUNDS) {
		TREE_LOCK(W);
		LOAD(W, BIAS, b);
		if
		:: b == 1 ->			/* revocation */
#ifdef MUT_SCAN_BEFORE_CLEAR
			SCAN();
#endif
			STORE(W, BIAS, 0);	/* seq_cst store ... */
#ifndef MUT_NO_WRITER_FENCE
			FENCE(W);		/* ... the full fence */
#endif
#ifndef MUT_SCAN_BEFORE_CLEAR
			SCAN()
#endif
		:: else
		fi;
		wtree = 1;
		TREE_UNLOCK(W);
		/* wait for the readers in the tree (tree-held, materialised) */
		(intree[0] == 0 && intree[1] == 0);

		d_step { wcs = 1; assert(rcs == 0) };
		wcs = 0;

		TREE_LOCK(W);
		wtree = 0;
		TREE_UNLOCK(W)
	}
	ndone++
}

init
{
	byte i;

	mem[BIAS] = 1;			/* the tree starts biased */
	atomic {
		for (i : 0 .. NR - 1) {
			run reader(i)
		}
		run writer();
#ifdef XUNLOCK
		run unlocker()
#endif
	}
	ndone == NT;
	/* every RMW drained its thread's buffer; the last step of each thread
	 * is one */
	assert(buf[0].n == 0 && buf[1].n == 0 && buf[2].n == 0 && buf[3].n == 0);
	assert(mem[SLOT(0)] == IDLE && mem[SLOT(1)] == IDLE);
	assert(intree[0] == 0 && intree[1] == 0 && !wtree && !tl)
}
