/*
 * The event store and the decisions it applies: decide(), apply(), store(), step() and
 * write_receipt(). Part of hold-protocol.pml, which includes it.
 */

/* The working set of a process that takes steps: its batch, and what the step answered. */
#define CLEAR_BATCH xop = X_NONE; pp = P_NONE; pa = 0; rk = 0; rc = 0
#define LOCALS \
  byte xop, pp, pa, rk, rv, cost, out, rj, res, tries, wr, v, sa, flags, gst, gpay; \
  bit rc, sr, sc, readable, again, ok, noop, joined, gd, gad

/* How a step reaches the stream: decided and appended at once, or decided now and appended later. */
#define PH_FULL 0
#define PH_DECIDE 1
#define PH_APPEND 2

/* The step's decision on the tree as it stands (decideSequence: every command or none). */
inline decide() {
  ok = 1; noop = 0; joined = 0; rj = RJ_OTHER;
  if
  :: (xop == X_AUTH || xop == X_AUTHCAPT) && ans[c] != V_NONE -> ok = 0  /* checkUnanswered (F2) */
  :: (xop == X_AUTH || xop == X_AUTHCAPT) && ans[c] == V_NONE ->
    if
    :: hst[h] == H_NONE && (inv + 1 > MAX_INV || committed + EXPOSURE > LIMIT) -> ok = 0
    :: hst[h] == H_NONE && !(inv + 1 > MAX_INV || committed + EXPOSURE > LIMIT) -> skip
    :: hst[h] == H_AUTH -> joined = 1  /* B8: a twin sees the same authorized hold */
    :: hst[h] == H_REVERSED -> ok = 0
    :: hst[h] != H_NONE && hst[h] != H_AUTH && hst[h] != H_REVERSED -> ok = 0; rj = RJ_DISPATCHED
    fi;
    if
    :: xop == X_AUTH && joined -> noop = 1
    :: xop == X_AUTHCAPT && joined && hexp[h] -> ok = 0  /* hold_expired */
    :: else -> skip
    fi
  :: xop == X_CAPT ->
    if
    :: hst[h] == H_AUTH && !hexp[h] && ans[c] != V_NONE -> ok = 0  /* checkUnanswered (F2) */
    :: hst[h] == H_AUTH && !hexp[h] && ans[c] == V_NONE -> skip
    :: hst[h] == H_AUTH && hexp[h] -> ok = 0
    :: hst[h] == H_REVERSED || hst[h] == H_NONE -> ok = 0
    :: hst[h] >= H_CAPT && hst[h] != H_REVERSED -> ok = 0; rj = RJ_DISPATCHED
    fi
  :: xop == X_ROLLBACK ->
    if
    :: hst[h] == H_REVERSED -> noop = 1
    :: hst[h] != H_REVERSED && hst[h] != H_AUTH -> ok = 0
    :: else -> skip
    fi
  :: xop == X_CANCEL ->
    if
    :: hst[h] == H_CANCELLED -> noop = 1
    :: hst[h] != H_CANCELLED && hst[h] != H_CAPT -> ok = 0
    :: else -> skip
    fi
  :: xop == X_ADMIT ->
    if
    :: hadm[h] -> ok = 0; rj = RJ_ADMITTED  /* decideAdmit: one admission per hold (F1) */
    :: !hadm[h] && hst[h] != H_CAPT -> ok = 0
    :: else -> skip
    fi
  :: xop == X_SETTLE || xop == X_RETAIN || xop == X_RELEXP ->
    if
    :: hst[h] != H_CAPT || !hadm[h] -> ok = 0
    :: else -> skip
    fi
  :: xop == X_NONE -> skip
  fi;
  /*
   * gd: a plan that gives budget back only on the hold as it was read (the reconciler's and
   * the stranded-hold sweep's onTruth, ADR 0059): on a hold that changed since, only the
   * rail's facts land and the ambiguity stays open.
   */
  if
  :: gd && (hst[h] != gst || hadm[h] != gad || hpay[h] != gpay) -> xop = X_NONE; rk = 0
  :: else -> skip
  fi;
  if
  :: ok && rk != 0 && (amb[h] & rk) == 0 -> ok = 0  /* ambiguity_unknown */
  :: else -> skip
  fi;
  if
  :: ok && rc && ans[c] != V_NONE -> ok = 0  /* command_already_answered */
  :: else -> skip
  fi;
  /* capture_outstanding (F2): an Admit's deny while its command's own capture stands unexplained */
  if
  :: ok && rc && rv == V_DENY && c < S0 && hst[h] == H_CAPT && !hadm[h] && hcb[h] == c && (amb[h] | pa) == 0 ->
    ok = 0
  :: else -> skip
  fi
}

#define HAS_EVENTS (pp != P_NONE || pa != 0 || (xop != X_NONE && !noop) || rk != 0 || rc)

/* A hold changes status only from a live one: exactly one terminal state, ever (evolve.ts asserts). */
inline move(to) {
  assert(!TERMINAL(hst[h]));
  hst[h] = to
}

/* The commit lands: evolve.ts, including the usage deltas of mutate(). */
inline apply() {
  if
  :: pp != P_NONE -> hpay[h] = pp
  :: else -> skip
  fi;
  amb[h] = amb[h] | pa;
  if
  :: xop == X_AUTH && !noop -> move(H_AUTH); hby[h] = c; inv++; committed = committed + EXPOSURE
  :: xop == X_AUTHCAPT && !joined ->
    move(H_CAPT); hby[h] = c; hcb[h] = c; inv++; committed = committed + EXPOSURE; ncapt[h]++
  :: xop == X_AUTHCAPT && joined -> move(H_CAPT); hcb[h] = c; ncapt[h]++
  :: xop == X_CAPT -> move(H_CAPT); hcb[h] = c; ncapt[h]++
  :: xop == X_ROLLBACK && !noop -> move(H_REVERSED); inv--; committed = committed - EXPOSURE
  :: xop == X_CANCEL && !noop -> move(H_CANCELLED); inv--; committed = committed - EXPOSURE
  :: xop == X_RELEXP -> move(H_RELEASED); inv--; committed = committed - EXPOSURE
  :: xop == X_ADMIT && !noop -> hadm[h] = 1
  :: xop == X_SETTLE -> move(H_SETTLED); hreal[h] = cost; committed = committed - EXPOSURE + cost
  :: xop == X_RETAIN -> move(H_RETAINED)
  :: else -> skip
  fi;
  if
  :: rk != 0 -> amb[h] = amb[h] ^ rk
  :: else -> skip
  fi;
  if
  :: rc -> ans[c] = rv
  :: else -> skip
  fi
}

/*
 * Whether the commit's first event id (its Nats-Msg-Id) is already in the stream. Payment
 * steps and ambiguities carry an ordinal taken from the state, so a decision never repeats
 * one; the fixed ids are the spec's (B1, B2, B13) and the receipt's.
 */
#define FIRST_ID_LANDED \
  (pp == P_NONE && pa == 0 && \
   ((xop == X_AUTH || xop == X_AUTHCAPT && !joined) && hst[h] != H_NONE || \
    (xop == X_CAPT || xop == X_AUTHCAPT && joined) && ncapt[h] > 0 || \
    xop == X_NONE && rk == 0 && rc && ans[c] != V_NONE))

/*
 * The event store: one subject, whose commits are the single source of truth. An append
 * lands only if its first event id is new (the duplicate window) and the subject's last
 * sequence is the one its decision read (optimistic concurrency); otherwise the caller
 * catches up and decides again. So a commit that lands was decided on the state it lands
 * on, and deciding and appending are one atomic step (PH_FULL), unless the broken variant
 * has them apart. An append may be lost on the way, or land with its acknowledgement lost:
 * AppendOutcomeUnknown either way. sa/sr are what the answer shows of the tree.
 */
inline store(phase) {
  if
  :: phase != PH_APPEND -> decide()
  :: phase == PH_APPEND -> ok = flags & 1; noop = (flags >> 1) & 1; joined = (flags >> 2) & 1
  fi;
  out = 0; again = 0;
  if
  :: !ok -> out = O_REJECTED; printf("MSC: store: h%d op=%d receipt(cmd%d) rejected\n", h, xop, c)
  :: ok && !HAS_EVENTS -> out = O_COMMITTED
  :: ok && HAS_EVENTS && phase == PH_DECIDE -> skip  /* the append goes out later, on this view */
  :: ok && HAS_EVENTS && phase != PH_DECIDE ->
    if
    :: FIRST_ID_LANDED -> again = 1  /* a duplicate: catch up and decide again */
    :: else ->
      if
      :: out = O_COMMITTED
      :: FAULT -> faults--; out = O_UNKNOWN; again = 1  /* lost on the way: never landed */
      :: FAULT -> faults--; out = O_UNKNOWN  /* landed; its acknowledgement lost */
      fi;
      if
      :: again -> again = 0; printf("MSC: store: append for h%d op=%d lost before it landed\n", h, xop)
      :: else ->
        apply();
        printf("MSC: store: commit h%d op=%d pay=%d amb+=%d resolve=%d receipt(cmd%d)=%d ack-lost=%d\n", h, xop, pp, pa,
          rk, c, rv * rc, out == O_UNKNOWN)
      fi
    fi
  fi;
  sa = ans[c]; sr = RESUMABLE(h, c);
  flags = ok | (noop << 1) | (joined << 2)
}

/*
 * One durable step (TreeStore.step), as the caller sees it: committed, rejected (with the
 * state it was rejected on), or unknown, after which the stream is read back, which may
 * fail too (readable = 0: the present event ids are undefined).
 */
inline step() {
  again = 1;
  do
  :: again ->
#ifdef BROKEN_CAPTURE_NO_EXPECTED_SEQ
    if
    :: STALE_OP ->
      atomic { store(PH_DECIDE) };
      if
      :: out == 0 && ok -> atomic { store(PH_APPEND) }  /* others ran in between */
      :: else -> skip
      fi
    :: else -> atomic { store(PH_FULL) }
    fi
#else
    atomic { store(PH_FULL) }
#endif
  :: !again -> break
  od;
  if
  :: out == O_UNKNOWN ->
    atomic {
      if
      /*
       * sc: the read-back shows the hold captured by this command. The merged path also asks
       * whether the capture's id is present, but it compares the stored id with the completed
       * one, so only the hold's captured_by ever decides.
       */
      :: readable = 1; sa = ans[c]; sc = (hst[h] == H_CAPT && hcb[h] == c)
      :: FAULT -> faults--; readable = 0
      fi
    }
  :: else -> skip
  fi
}

/* writeReceipt: the receipt with the path's last facts; an answered command gets its answer. */
inline write_receipt() {
  tries = 0;
  do
  :: tries == RECEIPT_ATTEMPTS -> wr = W_THROW; break
  :: tries < RECEIPT_ATTEMPTS ->
    tries++;
    step();
    if
    :: out == O_COMMITTED -> wr = W_WRITTEN; v = rv; break
    :: out == O_REJECTED && sa != V_NONE -> wr = W_WRITTEN; v = sa; break
    :: out == O_REJECTED && sa == V_NONE -> wr = W_REJECTED; break
    :: out == O_UNKNOWN && readable && sa != V_NONE -> wr = W_WRITTEN; v = sa; break
    :: out == O_UNKNOWN && !(readable && sa != V_NONE) -> skip  /* not confirmed: the ids dedupe, try again */
    fi
  od
}
