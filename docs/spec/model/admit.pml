/*
 * Admit and Settle: one run of each on some replica. Part of hold-protocol.pml, which
 * includes it.
 */


/*
 * One run of an Admit on some replica (admit.handler.ts); k: which send of the command it is.
 * Every durable step goes through do_step, which returns to the label `ret` names.
 */
#define AFTER_AUTHORIZE 1
#define AFTER_CAPTURE 2
#define AFTER_ROLLBACK 3
#define AFTER_RECEIPT 4
#define AFTER_CANCEL 5
#define AFTER_RECORD 6

proctype Admit(byte c; byte h; byte k) {
  LOCALS;
  byte ret, sv;
  bit alone, sup;
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
  :: (out == O_REJECTED || out == O_UNKNOWN && readable) && sa != V_NONE && !(rv == V_ALLOW && sa != V_ALLOW) ->
    v = sa; goto answer
  /*
   * AdmitFlow.superseded: another run of this command was answered first, and not with this
   * allow. This run unwinds what it took; its facts (the payment kept in the batch) go in
   * without a receipt, and the answer is that run's.
   */
  :: (out == O_REJECTED || out == O_UNKNOWN && readable) && sa != V_NONE && rv == V_ALLOW && sa != V_ALLOW ->
    sup = 1; sv = sa; xop = X_NONE; rc = 0
  :: out == O_UNKNOWN && !(readable && sa != V_NONE) && tries < RECEIPT_ATTEMPTS -> goto receipt_try
  :: out == O_UNKNOWN && !(readable && sa != V_NONE) && tries >= RECEIPT_ATTEMPTS -> goto gone  /* throws */
  /* deferToAdmitted (F1): a twin's allow admitted the hold; nothing of it is ours to give back */
  :: out == O_REJECTED && sa == V_NONE && rv == V_ALLOW && rj == RJ_ADMITTED ->
    CLEAR_BATCH; rc = 1; rv = V_DENY; alone = 1; goto receipt
  :: out == O_REJECTED && sa == V_NONE && rv == V_ALLOW && rj != RJ_ADMITTED -> skip
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
  if
  :: sup -> goto record
  :: else -> skip
  fi;
  xop = X_NONE; rk = 0; rc = 1; rv = V_DENY;
  goto receipt;
record:
  /* recordWithoutReceipt: the superseded run's facts in one step, whatever it answers */
  xop = X_NONE; rk = 0; rc = 0;
  if
  :: !HAS_EVENTS -> v = sv; goto answer
  :: else -> skip
  fi;
  ret = AFTER_RECORD; goto do_step;
after_record:
  v = sv; goto answer;
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
  :: ret == AFTER_RECORD -> goto after_record
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
  :: wr == W_REJECTED && !alone -> CLEAR_BATCH; rc = 1; rv = V_DENY; alone = 1; goto finish  /* another won */
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
