/*
 * The hold protocol of the budget authority, as the code runs it: Admit (authorize,
 * capture, payment, allow), Settle, the expiry sweep (B20) and the reconciler (B21), over
 * one delegation tree whose stream is the single source of truth. README.md (next to this
 * file) says which B rules each property covers and how to run the checks.
 *
 * Where each part comes from:
 *   the stream         libs/budget/application/src/tree-store.ts, libs/eventing, ADR 0004
 *   Admit              libs/budget/application/src/admit/*.ts, ADR 0025 (resume), ADR 0041 (merged)
 *   Settle             libs/budget/application/src/settle.handler.ts
 *   expiry, reconciler expire.handler.ts, reconcile.handler.ts
 *   decisions          libs/budget/domain/src/decide-hold.ts, decide-settle.ts, evolve.ts
 *
 * Bounds: one tree, two requests r0 and r1 (holds h0, h1) of exposure 1 on a grant with
 * max_total_cost_units 1 and max_invocations 1, so one hold fits at a time. r0 runs the whole
 * protocol under FAULTS faults in all: appends lost before or after they land, read-backs
 * that fail, ambiguous rail answers (applied or not), crashed runs, callers that time out and
 * re-send the same command id. r1 competes for the grant and meets no faults.
 *
 * Flags (spin -D...):
 *   FAULTS=n   the fault budget (default 2).
 *   STEPWISE   the capture in its own commit after the authorization (a hook that leases, or
 *              authority.capture_with_authorize: false); default: both in one commit (ADR 0041).
 *   TWIN       an identical request (same request id, another command id, B8) from an HTTP
 *              client with its own Idempotency-Key, next to the orchestrator's.
 *   FRESH_RERUNS           leaves out the trigger of finding F2: a run of a command id starts
 *              only after the previous run ended, and sees its answer.
 *   NO_ZERO_RELEASE_FAULT  leaves out the trigger of finding F3: the release of a settlement
 *              completed at cost 0 always succeeds.
 *   BROKEN_CAPTURE_NO_EXPECTED_SEQ  the authorizing and capturing appends are decided on a
 *              view others may change first and land without the expected last sequence (only
 *              the Nats-Msg-Id duplicate window stands in their way).
 *   BROKEN_RELEASE_ON_LOST_ACK      a settlement takes an unanswered release for a confirmed one.
 *
 * Trails: `spin -t` prints the protocol's steps as "MSC:" lines (codes in README.md).
 */

#ifndef FAULTS
#define FAULTS 2
#endif

#define EXPOSURE 1
#define LIMIT 1
#define MAX_INV 1
/* Smaller than the authority's 3, so the fault budget can exhaust it and the throw is explored. */
#define RECEIPT_ATTEMPTS 2

/* Hold status (libs/budget/domain/src/model.ts HoldStatus); H_NONE: no hold yet. */
#define H_NONE 0
#define H_AUTH 1
#define H_CAPT 2
#define H_REVERSED 3
#define H_CANCELLED 4
#define H_RELEASED 5
#define H_SETTLED 6
#define H_RETAINED 7
#define TERMINAL(s) ((s) >= H_REVERSED)
#define DONE(h) (hst[h] == H_NONE || TERMINAL(hst[h]))

/* The hold's payment status: the last payment step recorded (evolve.ts recordPayment). */
#define P_NONE 0
#define P_AUTH 1
#define P_DECLINED 2
#define P_AMBIG 3
#define P_CAPTURED 4
#define P_CAPFAIL 5
#define P_RELEASED 6
#define P_RELPEND 7
#define P_RELFAIL 8
#define P_REFUNDED 9

/* What the rail holds for a reference (the request id). */
#define R_NONE 0
#define R_AUTH 1
#define R_CAPT 2
#define R_RELEASED 3
#define R_DECLINED 4
#define R_PENDING 5
#define R_REFUNDED 6
#define MONEY_HELD(h) (rail[h] == R_AUTH || rail[h] == R_CAPT)

/* Rail answers. */
#define RA_AUTHORIZED 1
#define RA_DECLINED 2
#define RA_AMBIGUOUS 3
#define RR_RELEASED 1
#define RR_PENDING 2
#define RR_ERROR 3
#define RC_SETTLED 1
#define RC_FAILED 2

/* Ambiguity kinds, one bit each (model.ts AmbiguityKind). */
#define A_IC 1
#define A_REV 2
#define A_CANC 4
#define A_PAUTH 8
#define A_PREL 16
#define A_PCAP 32

/* Commands: the orchestrator's Admit and Settle per request, and the twin's (B8). */
#define C0 0
#define C1 1
#define C2 2
#define S0 3
#define S1 4
#define S2 5
#define NC 6

#define V_NONE 0
#define V_ALLOW 1
#define V_DENY 2
#define V_GONE 3

/* The budget operation a step carries besides payment steps, ambiguities and its receipt. */
#define X_NONE 0
#define X_AUTH 1
#define X_CAPT 2
#define X_AUTHCAPT 3
#define X_ROLLBACK 4
#define X_CANCEL 5
#define X_ADMIT 6
#define X_SETTLE 7
#define X_RETAIN 8
#define X_RELEXP 9

#define O_COMMITTED 1
#define O_REJECTED 2
#define O_UNKNOWN 3
#define RJ_OTHER 1
#define RJ_DISPATCHED 2
#define W_WRITTEN 1
#define W_REJECTED 2
#define W_THROW 3

/* Settlement outcomes the orchestrator reports. */
#define OC_COMPLETED0 1
#define OC_COMPLETED1 2
#define OC_FAILED 3
#define OC_ELICIT 4
#define OC_NOTDISP 5

/* ---- the stream's truth: every tree state is a fold of its commits ---- */
byte hst[2];
bit hadm[2];
byte hby[2];      /* the command that authorized the hold (Hold.command_id) */
byte hreal[2];
byte hpay[2];
bit hexp[2];      /* the hold's TTL has passed (time is only ever compared with expires_at_ms) */
byte amb[2];      /* open ambiguities */
byte ans[NC];     /* the receipt recorded for each command id */
byte committed;   /* usage of the grant: exposed + realized */
byte inv;         /* usage of the grant: invocation_count */

/* ---- outside the ledger ---- */
byte rail[2];
byte rcapt[2];    /* captures the rail applied */
byte ncapt[2];    /* InvocationCaptured events applied */
byte ndisp[2];    /* provider calls made under the hold */
byte spent;       /* what the provider calls cost: completed at their cost, failed at worst case */
byte calls;       /* provider calls that count as invocations (an elicitation gives its back, B6) */
byte faults = FAULTS;
byte sends[NC];   /* how many times each command id was sent */
byte reply[NC];   /* the answer the caller's latest send got */

#define RESUMABLE(h, c) (hby[h] == c && hst[h] == H_CAPT && !hadm[h])
/* Faults strike the flows of r0 (and its twin); r1 is the competing request that always gets through. */
#define FAULT (faults > 0 && h == 0)
#define CRASH if :: atomic { FAULT -> faults--; printf("MSC: run of cmd%d crashed\n", c) }; goto gone :: true fi

#ifdef BROKEN_CAPTURE_NO_EXPECTED_SEQ
#define STALE_OP (xop == X_AUTH || xop == X_CAPT || xop == X_AUTHCAPT)
#else
#define STALE_OP false
#endif

/* How a step reaches the stream: decided and appended at once, or decided now and appended later. */
#define PH_FULL 0
#define PH_DECIDE 1
#define PH_APPEND 2

/* The step's decision on the tree as it stands (decideSequence: every command or none). */
inline decide() {
  ok = 1; noop = 0; joined = 0; rj = RJ_OTHER;
  if
  :: xop == X_AUTH || xop == X_AUTHCAPT ->
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
    :: hst[h] == H_AUTH && !hexp[h] -> skip
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
    :: hadm[h] -> noop = 1  /* decideAdmit: an admitted hold is accepted without an event */
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
  if
  :: ok && rk != 0 && (amb[h] & rk) == 0 -> ok = 0  /* ambiguity_unknown */
  :: else -> skip
  fi;
  if
  :: ok && rc && ans[c] != V_NONE -> ok = 0  /* command_already_answered */
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
  :: xop == X_AUTHCAPT && !joined -> move(H_CAPT); hby[h] = c; inv++; committed = committed + EXPOSURE; ncapt[h]++
  :: xop == X_AUTHCAPT && joined -> move(H_CAPT); ncapt[h]++
  :: xop == X_CAPT -> move(H_CAPT); ncapt[h]++
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
       * one, so only the hold's command id ever decides.
       */
      :: readable = 1; sa = ans[c]; sc = (hst[h] == H_CAPT && hby[h] == c)
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

/* The rail is idempotent by reference (the request id): a repeated call gets the first answer. */
inline rail_authorize() {
  atomic {
    if
    :: rail[h] == R_NONE ->
      if
      :: rail[h] = R_AUTH; res = RA_AUTHORIZED
      :: rail[h] = R_DECLINED; res = RA_DECLINED
      :: FAULT -> faults--; res = RA_AMBIGUOUS  /* unavailable: nothing authorized */
      :: FAULT -> faults--; rail[h] = R_AUTH; res = RA_AMBIGUOUS  /* authorized, answer lost */
      fi;
      printf("MSC: rail: authorize r%d -> %d (rail holds %d)\n", h, res, rail[h])
    :: rail[h] == R_DECLINED -> res = RA_DECLINED
    :: rail[h] != R_NONE && rail[h] != R_DECLINED -> res = RA_AUTHORIZED; printf("MSC: rail: authorize r%d again -> %d\n", h, res)
    fi
  }
}

inline rail_capture() {
  atomic {
    if
    :: rail[h] == R_AUTH ->
      if
      :: rail[h] = R_CAPT; rcapt[h]++; res = RC_SETTLED
      :: FAULT -> faults--; res = RC_FAILED  /* failed, or lost before the rail applied it */
      :: FAULT -> faults--; rail[h] = R_CAPT; rcapt[h]++; res = RC_FAILED  /* applied, answer lost */
      fi
    :: rail[h] == R_CAPT -> res = RC_SETTLED
    :: rail[h] != R_AUTH && rail[h] != R_CAPT -> res = RC_FAILED
    fi;
    printf("MSC: rail: capture r%d -> %d (rail holds %d)\n", h, res, rail[h])
  }
}

inline rail_release() {
  atomic {
    if
    :: rail[h] == R_AUTH ->
      if
      :: rail[h] = R_RELEASED; res = RR_RELEASED
      :: FAULT -> faults--; rail[h] = R_PENDING; res = RR_PENDING
      :: FAULT -> faults--; res = RR_ERROR  /* failed, or lost before the rail applied it */
      :: FAULT -> faults--; rail[h] = R_RELEASED; res = RR_ERROR  /* applied, answer lost */
      fi
    :: rail[h] == R_RELEASED -> res = RR_RELEASED
    :: rail[h] == R_PENDING -> res = RR_PENDING
    :: rail[h] != R_AUTH && rail[h] != R_RELEASED && rail[h] != R_PENDING -> res = RR_ERROR
    fi;
    printf("MSC: rail: release r%d -> %d (rail holds %d)\n", h, res, rail[h])
  }
}

#define CLEAR_BATCH xop = X_NONE; pp = P_NONE; pa = 0; rk = 0; rc = 0
#define LOCALS \
  byte xop, pp, pa, rk, rv, cost, out, rj, res, tries, wr, v, sa, flags; \
  bit rc, sr, sc, readable, again, ok, noop, joined

/*
 * One run of an Admit on some replica (admit.handler.ts); k: which send of the command it is.
 * Every durable step goes through do_step, which returns to the label `ret` names.
 */
#define AFTER_AUTHORIZE 1
#define AFTER_CAPTURE 2
#define AFTER_ROLLBACK 3
#define AFTER_RECEIPT 4
#define AFTER_CANCEL 5

proctype Admit(byte c; byte h; byte k) {
  LOCALS;
  byte ret;
  bit alone;
  /* answeredCommand on cachedOrRead: a replica's cache may not show the answer yet. */
  if
  :: ans[c] != V_NONE -> v = ans[c]; goto answer
#ifndef FRESH_RERUNS
  :: ans[c] != V_NONE -> skip
#endif
  :: else -> skip
  fi;
#ifdef STEPWISE
  xop = X_AUTH; ret = AFTER_AUTHORIZE; goto do_step;
after_authorize:
  if
  :: out == O_REJECTED -> goto refused
  :: out == O_UNKNOWN -> goto deny  /* authorize unconfirmed: if it landed, expiry reverses it (B20) */
  :: out == O_COMMITTED -> skip
  fi;
  CRASH;
  xop = X_CAPT; ret = AFTER_CAPTURE; goto do_step;
after_capture:
  if
  :: out == O_COMMITTED -> goto payment
  :: out == O_UNKNOWN -> xop = X_NONE; pa = A_IC; goto deny  /* B10 */
  :: out == O_REJECTED && rj == RJ_DISPATCHED && sr -> goto payment  /* resumeCaptured (ADR 0025) */
  :: out == O_REJECTED && rj == RJ_DISPATCHED && !sr -> goto deny  /* already dispatched (B2, B7) */
  :: out == O_REJECTED && rj != RJ_DISPATCHED -> skip
  fi;
  /* preDispatchCleanup (B15): roll the uncaptured hold back; a lost ack is recorded, then deny. */
  xop = X_ROLLBACK; ret = AFTER_ROLLBACK; goto do_step;
after_rollback:
  xop = X_NONE;
  if
  :: out == O_UNKNOWN -> pa = A_REV
  :: else -> skip
  fi;
  goto deny;
#else
  /* ADR 0041: authorize and capture in one commit */
  xop = X_AUTHCAPT; ret = AFTER_AUTHORIZE; goto do_step;
after_authorize:
  if
  :: out == O_REJECTED -> goto refused
  :: out == O_COMMITTED -> goto payment
  :: out == O_UNKNOWN && readable && sc -> xop = X_NONE; pa = A_IC; goto deny  /* B10 */
  :: out == O_UNKNOWN && readable && !sc -> goto deny  /* nothing of ours landed: authorize unconfirmed */
  :: out == O_UNKNOWN && !readable -> goto gone  /* answered unavailable: the caller re-sends */
  fi;
#endif
refused:
  /* afterRefusedAuthorize: the command's answer, else resumeCaptured, else deny */
  if
  :: sa != V_NONE -> v = sa; goto answer
  :: sa == V_NONE && sr -> goto payment
  :: else -> goto deny
  fi;
payment:
  CRASH;
  CLEAR_BATCH;
  rail_authorize();
  if
  :: res == RA_AUTHORIZED -> pp = P_AUTH
  :: res == RA_DECLINED -> pp = P_DECLINED; goto cancel
  :: res == RA_AMBIGUOUS -> pp = P_AMBIG; pa = A_PAUTH; goto deny  /* B3 */
  fi;
  CRASH;
  /* allow: the admission and the receipt in one commit */
  xop = X_ADMIT; rc = 1; rv = V_ALLOW;
receipt:
  /* writeReceipt, inside answer(): a receipt with the pending facts, else the receipt alone */
  tries = 0;
receipt_try:
  tries++; ret = AFTER_RECEIPT; goto do_step;
after_receipt:
  if
  :: out == O_COMMITTED -> v = rv; goto answer
  :: (out == O_REJECTED || out == O_UNKNOWN && readable) && sa != V_NONE -> v = sa; goto answer
  :: out == O_UNKNOWN && !(readable && sa != V_NONE) && tries < RECEIPT_ATTEMPTS -> goto receipt_try
  :: out == O_UNKNOWN && !(readable && sa != V_NONE) && tries >= RECEIPT_ATTEMPTS -> goto gone  /* throws */
  :: out == O_REJECTED && sa == V_NONE && rv == V_ALLOW -> skip
  :: out == O_REJECTED && sa == V_NONE && rv == V_DENY && !alone -> CLEAR_BATCH; rc = 1; alone = 1; goto receipt
  :: out == O_REJECTED && sa == V_NONE && rv == V_DENY && alone -> goto gone
  fi;
  /* unwindAfterPayment (B9, B16): only a confirmed release lets the capture be cancelled */
  rail_release();
  if
  :: res == RR_RELEASED -> pp = P_RELEASED
  :: res == RR_PENDING -> pp = P_RELPEND; pa = pa | A_PREL; goto deny
  :: res == RR_ERROR -> pp = P_RELFAIL; pa = pa | A_PREL; goto deny
  fi;
cancel:
  /* cancelBeforeDispatch (B3, B11, B12): a lost ack is recorded; a refusal keeps the facts */
  xop = X_CANCEL; rc = 0; ret = AFTER_CANCEL; goto do_step;
after_cancel:
  if
  :: out == O_COMMITTED -> pp = P_NONE; pa = 0
  :: out == O_UNKNOWN -> pp = P_NONE; pa = A_CANC
  :: out == O_REJECTED -> skip
  fi;
deny:
  CRASH;
  xop = X_NONE; rk = 0; rc = 1; rv = V_DENY;
  goto receipt;
do_step:
  step();
  if
  :: ret == AFTER_AUTHORIZE -> goto after_authorize
#ifdef STEPWISE
  :: ret == AFTER_CAPTURE -> goto after_capture
  :: ret == AFTER_ROLLBACK -> goto after_rollback
#endif
  :: ret == AFTER_RECEIPT -> goto after_receipt
  :: ret == AFTER_CANCEL -> goto after_cancel
  fi;
answer:
  atomic {
    printf("MSC: admit cmd%d send %d answers %d\n", c, k, v);
    if
    :: sends[c] == k -> reply[c] = v
    :: else -> skip  /* the caller stopped waiting for this send */
    fi
  };
  goto done;
gone:
  /* Crashed, threw, or its reply was lost: to the caller it is a timeout. */
  atomic {
    if
    :: sends[c] == k -> reply[c] = V_GONE
    :: else -> skip
    fi
  };
done:
  skip
}

/* One run of a Settle (settle.handler.ts). */
proctype Settle(byte c; byte h; byte o; byte k) {
  LOCALS;
  byte st, pay;
  bit ad, alone;
  atomic {
    if
    :: hst[h] == H_NONE -> v = V_DENY; goto answer  /* unknown hold: answered from the unverified tree */
    :: hst[h] != H_NONE && ans[c] != V_NONE -> v = ans[c]; goto answer
    :: else -> st = hst[h]; ad = hadm[h]; pay = hpay[h]
    fi
  };
  if
  :: !ad || st != H_CAPT -> rv = V_DENY; alone = 1; goto finish  /* never admitted, or already terminal */
  :: else -> skip
  fi;
  if
  :: o == OC_COMPLETED0 || o == OC_COMPLETED1 ->
    /* B4: a reversible hold is captured for the actual amount, or released at 0 */
    if
    :: o == OC_COMPLETED1 -> cost = 1
    :: else -> cost = 0
    fi;
    if
    :: pay == P_AUTH && cost == 0 ->
#ifdef NO_ZERO_RELEASE_FAULT
      atomic { rail[h] = R_RELEASED; res = RR_RELEASED };
#else
      rail_release();
#endif
      if
      :: res == RR_RELEASED -> pp = P_RELEASED
      :: else -> pp = P_CAPFAIL; pa = A_PCAP
      fi
    :: pay == P_AUTH && cost > 0 ->
      rail_capture();
      if
      :: res == RC_SETTLED -> pp = P_CAPTURED
      :: else -> pp = P_CAPFAIL; pa = A_PCAP
      fi
    :: else -> skip
    fi;
    xop = X_SETTLE; rv = V_ALLOW
  :: o == OC_FAILED -> xop = X_RETAIN; rv = V_DENY  /* B5: everything kept */
  :: o == OC_ELICIT || o == OC_NOTDISP ->
    /* B6, B9: the budget comes back only once the rail confirms the release */
    rv = V_DENY;
    if
    :: pay == P_AUTH ->
      rail_release();
#ifdef BROKEN_RELEASE_ON_LOST_ACK
      if
      :: res == RR_ERROR -> res = RR_RELEASED
      :: else -> skip
      fi;
#endif
      if
      :: res == RR_RELEASED -> pp = P_RELEASED
      :: res == RR_PENDING -> pp = P_RELPEND; pa = A_PREL; goto finish
      :: res == RR_ERROR -> pp = P_RELFAIL; pa = A_PREL; goto finish
      fi
    :: else -> skip
    fi;
    if
    :: o == OC_ELICIT -> xop = X_RELEXP
    :: else -> xop = X_CANCEL
    fi
  fi;
finish:
  CRASH;
  rc = 1;
  write_receipt();
  if
  :: wr == W_WRITTEN -> goto answer
  :: wr == W_THROW -> goto gone
  :: wr == W_REJECTED && !alone -> CLEAR_BATCH; rc = 1; rv = V_DENY; alone = 1; goto finish  /* another settlement won */
  :: wr == W_REJECTED && alone -> goto gone
  fi;
answer:
  atomic {
    printf("MSC: settle cmd%d send %d answers %d\n", c, k, v);
    if
    :: sends[c] == k -> reply[c] = v
    :: else -> skip
    fi
  };
  goto done;
gone:
  atomic {
    if
    :: sends[c] == k -> reply[c] = V_GONE
    :: else -> skip
    fi
  };
done:
  skip
}

/*
 * A caller: the orchestrator's dispatch worker for one attempt, which re-sends the same command
 * ids after a timeout, an unavailable answer, or its own crash and the unit's redelivery; or an
 * HTTP client re-sending under its Idempotency-Key. It dispatches only on an allow, then settles.
 */
proctype Client(byte c; byte h; byte s) {
  byte o;
  atomic { sends[c] = 1; run Admit(c, h, 1) };
  do
  :: reply[c] == V_ALLOW || reply[c] == V_DENY -> break
  :: reply[c] == V_GONE -> atomic { sends[c]++; reply[c] = V_NONE; run Admit(c, h, sends[c]) }
#ifndef FRESH_RERUNS
  :: atomic { reply[c] == V_NONE && faults > 0 -> faults--; sends[c]++; run Admit(c, h, sends[c]); printf("MSC: caller timed out, re-sends cmd%d\n", c) }
#endif
  od;
  if
  :: reply[c] == V_DENY -> goto done
  :: else -> skip
  fi;
  /* The provider call; a crash during it is settled as failed_after_dispatch (settle_orphan). */
  if
  :: c != C0 -> o = OC_COMPLETED1  /* the twin only needs to spend */
  :: c == C0 -> o = OC_COMPLETED0
  :: c == C0 -> o = OC_COMPLETED1
  :: c == C0 -> o = OC_FAILED
  :: c == C0 -> o = OC_ELICIT
  :: c == C0 -> o = OC_NOTDISP  /* the unit moved on before the attempt started (afterLostStart) */
  fi;
  atomic {
    if
    :: o != OC_NOTDISP -> ndisp[h]++
    :: else -> skip
    fi;
    if
    :: o == OC_COMPLETED1 || o == OC_FAILED -> spent++
    :: else -> skip
    fi;
    if
    :: o != OC_NOTDISP && o != OC_ELICIT -> calls++
    :: else -> skip
    fi;
    printf("MSC: cmd%d allowed: dispatch under h%d, outcome %d; settle cmd%d\n", c, h, o, s);
    sends[s] = 1;
    run Settle(s, h, o, 1)
  };
  do
  :: reply[s] == V_ALLOW || reply[s] == V_DENY -> break
  :: reply[s] == V_GONE -> atomic { sends[s]++; reply[s] = V_NONE; run Settle(s, h, o, sends[s]) }
#ifndef FRESH_RERUNS
  :: atomic { reply[s] == V_NONE && faults > 0 -> faults--; sends[s]++; run Settle(s, h, o, sends[s]); printf("MSC: caller timed out, re-sends cmd%d\n", s) }
#endif
  od;
done:
  skip
}

/* B20 (expire.handler.ts): uncaptured holds past their TTL are reversed; captured ones never. */
proctype Expiry() {
  byte h;
end:
  do
  :: atomic {
      (hst[0] == H_AUTH && hexp[0]) || (hst[1] == H_AUTH && hexp[1]) ->
      if
      :: skip  /* appended */
      :: faults > 0 && hst[0] == H_AUTH -> faults--; goto lost  /* lost on the way: the next sweep tries again */
      :: faults > 0 && hst[0] == H_AUTH -> faults--  /* landed, acknowledgement lost: nothing follows either way */
      fi;
      for (h : 0 .. 1) {
        if
        :: hst[h] == H_AUTH && hexp[h] -> move(H_REVERSED); inv--; committed = committed - EXPOSURE
        :: else -> skip
        fi
      };
lost:
      skip
    }
  od
}

/*
 * B21 (reconcile.handler.ts): each open ambiguity is resolved from the hold as read and the
 * rail's settlement state; the facts are decided again when they are appended. One that
 * cannot be resolved yet (a release pending at the rail, a capture the rail does not show)
 * waits for the rail instead of being retried in a loop that changes nothing.
 */
#define MONEY_CHECK(h, k) ((k == A_IC || k == A_REV) && hst[h] == H_CAPT && !hadm[h] || \
  (k == A_PAUTH || k == A_PREL) && hst[h] == H_CAPT)
#define WAITS(h, k) (k == A_PCAP && rail[h] != R_CAPT || MONEY_CHECK(h, k) && rail[h] == R_PENDING)
#define OPEN(h, k) ((amb[h] & k) != 0 && !WAITS(h, k))
#define ANY_OPEN(h) (OPEN(h, A_IC) || OPEN(h, A_REV) || OPEN(h, A_CANC) || OPEN(h, A_PAUTH) || \
  OPEN(h, A_PREL) || OPEN(h, A_PCAP))

proctype Reconciler() {
  LOCALS;
  byte c, h, st, rs;
  bit ad, wait;
end:
  do
  :: atomic {
      ANY_OPEN(0) || ANY_OPEN(1) ->
      if
      :: ANY_OPEN(0) -> h = 0
      :: ANY_OPEN(1) -> h = 1
      fi;
      if
      :: OPEN(h, A_IC) -> rk = A_IC
      :: OPEN(h, A_REV) -> rk = A_REV
      :: OPEN(h, A_CANC) -> rk = A_CANC
      :: OPEN(h, A_PAUTH) -> rk = A_PAUTH
      :: OPEN(h, A_PREL) -> rk = A_PREL
      :: OPEN(h, A_PCAP) -> rk = A_PCAP
      fi;
      st = hst[h]; ad = hadm[h]; xop = X_NONE; pp = P_NONE; pa = 0; rc = 0; c = 0; wait = 0;
      printf("MSC: reconciler: ambiguity %d of h%d, hold read as status %d admitted %d\n", rk, h, st, ad)
    };
    if
    :: rk == A_IC || rk == A_REV ->
      if
      :: st == H_AUTH -> xop = X_ROLLBACK
      :: st == H_CAPT && !ad -> xop = X_CANCEL
      :: else -> skip
      fi
    :: rk == A_CANC && st == H_CAPT -> xop = X_CANCEL
    :: rk == A_CANC && st != H_CAPT -> skip
    :: (rk == A_PAUTH || rk == A_PREL) && st == H_CAPT -> xop = X_CANCEL
    :: (rk == A_PAUTH || rk == A_PREL) && st != H_CAPT -> skip
    :: rk == A_PCAP -> pp = P_CAPTURED  /* the rail shows the capture */
    fi;
    /* afterMoneyCheck: a capture is undone only once the rail holds no money for it */
    if
    :: xop == X_CANCEL && rk != A_CANC ->
      rs = rail[h];
      printf("MSC: reconciler: rail settlement state of r%d is %d\n", h, rs);
      if
      :: rs == R_NONE || rs == R_DECLINED -> skip
      :: rs == R_RELEASED -> pp = P_RELEASED
      :: rs == R_REFUNDED -> pp = P_REFUNDED
      :: rs == R_PENDING -> wait = 1
      :: rs == R_AUTH ->
        rail_release();
        if
        :: res == RR_RELEASED -> pp = P_RELEASED
        :: else -> wait = 1
        fi
      :: rs == R_CAPT ->
        atomic {
          if
          :: rail[h] == R_CAPT -> rail[h] = R_REFUNDED; pp = P_REFUNDED
          :: FAULT -> faults--; wait = 1
          fi
        }
      fi
    :: else -> skip
    fi;
    if
    :: !wait -> step()
    :: else -> skip  /* stays open for the next run */
    fi
  od
}

/* Once nothing can move, every hold is in a terminal state: holds_terminate as a safety check. */
proctype Watchdog() {
  timeout -> assert(DONE(0) && DONE(1))
}

proctype Clock() {
end:
  do
  :: atomic { hst[0] == H_AUTH && !hexp[0] -> hexp[0] = 1 }
  :: atomic { hst[1] == H_AUTH && !hexp[1] -> hexp[1] = 1 }
  od
}

/* A pending release completes at the rail in its own time. */
proctype Rail() {
end:
  do
  :: atomic { rail[0] == R_PENDING -> rail[0] = R_RELEASED }
  :: atomic { rail[1] == R_PENDING -> rail[1] = R_RELEASED }
  od
}

/*
 * r1: a request that competes for the same grant and meets no faults. Its authorization and
 * capture is decided by the same store; its payment, admission, call and settlement at cost 1
 * follow in the same atomic step, because all that matters to r0 is when r1 takes the budget.
 */
proctype Competitor() {
  LOCALS;
  byte c = C1, h = 1;
  atomic {
    xop = X_AUTHCAPT;
    step();
    if
    :: out == O_COMMITTED ->
      rail[h] = R_AUTH; hpay[h] = P_AUTH; hadm[h] = 1; ans[C1] = V_ALLOW;
      ndisp[h]++; spent++; calls++;
      rail[h] = R_CAPT; rcapt[h]++; hpay[h] = P_CAPTURED; move(H_SETTLED); hreal[h] = 1; ans[S1] = V_ALLOW;
      printf("MSC: r1 admitted, dispatched and settled at cost 1\n")
    :: else -> skip
    fi
  }
}

init {
  atomic {
    run Client(C0, 0, S0);
    run Competitor();
#ifdef TWIN
    run Client(C2, 0, S2);
#endif
#ifdef STEPWISE
    run Expiry();
    run Clock();
#endif
    run Reconciler();
    run Rail();
    run Watchdog()
  }
}

#define BUDGET_BACK(h) \
  (hst[h] == H_REVERSED || hst[h] == H_CANCELLED || hst[h] == H_RELEASED || hst[h] == H_SETTLED && hreal[h] == 0)

/* B2, B8: one capture per hold in the ledger and at the rail, and one provider call per hold. */
ltl no_double_capture {
  [] (ncapt[0] <= 1 && ncapt[1] <= 1 && rcapt[0] <= 1 && rcapt[1] <= 1 && ndisp[0] <= 1 && ndisp[1] <= 1)
}

/* B1, B19: committed and invocations within the grant, in the ledger and in the calls made. */
ltl no_overspend {
  [] (committed <= LIMIT && inv <= MAX_INV && spent <= LIMIT && calls <= MAX_INV)
}

/* B20, B21: once faults stop, every hold ends in a terminal state (and stays there). */
ltl holds_terminate {
  <> [] (DONE(0) && DONE(1))
}

/* B9, B21: budget comes back only for a hold the rail holds no money for. */
ltl money_before_budget {
  [] (!(BUDGET_BACK(0) && MONEY_HELD(0)) && !(BUDGET_BACK(1) && MONEY_HELD(1)))
}
