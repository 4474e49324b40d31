/*
 * The callers and the background: the orchestrator and the twin, the competing request, the
 * expiry sweep and its clock, the reconciler and the watchdog. Part of hold-protocol.pml,
 * which includes it.
 */

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
  :: atomic {
      reply[c] == V_NONE && faults > 0 -> faults--; sends[c]++; run Admit(c, h, sends[c]);
      printf("MSC: caller timed out, re-sends cmd%d\n", c)
    }
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
  :: atomic {
      reply[s] == V_NONE && faults > 0 -> faults--; sends[s]++; run Settle(s, h, o, sends[s]);
      printf("MSC: caller timed out, re-sends cmd%d\n", s)
    }
#endif
  od;
done:
  skip
}

/* B20 (expire.handler.ts): uncaptured holds past their TTL are reversed; captured ones never. */

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


proctype Clock() {
end:
  do
  :: atomic { hst[0] == H_AUTH && !hexp[0] -> hexp[0] = 1 }
  :: atomic { hst[1] == H_AUTH && !hexp[1] -> hexp[1] = 1 }
  od
}

/* A pending release completes at the rail in its own time. */

/*
 * B21 (reconcile.handler.ts): each open ambiguity is resolved from the hold as read and the
 * rail's settlement state; the facts are decided again when they are appended, and a plan
 * that gives budget back lands only on the hold as it was read (gd, ADR 0059). One that
 * cannot be resolved yet (a release pending at the rail) waits for the rail instead of being
 * retried in a loop that changes nothing.
 *
 * ADR 0059: an admitted hold is dispatched, so its budget comes back only when its own
 * settlement asked for that (a release the rail did not confirm: SETTLE_ASKED); otherwise
 * the ambiguity is resolved with no fact and the settlement ends the hold. A payment capture
 * the rail did not confirm is completed from the rail's state: a capture it shows is recorded,
 * an authorization it still holds is captured for the amount booked, or released at 0.
 */
#define SETTLE_ASKED(h) (h == 0 && (ans[S0] != V_NONE || ans[S2] != V_NONE))
#define MAY_UNDO(h) (!hadm[h] || SETTLE_ASKED(h))
#define MONEY_CHECK(h, k) ((k == A_IC || k == A_REV) && hst[h] == H_CAPT && !hadm[h] || \
  (k == A_PAUTH || k == A_PREL) && hst[h] == H_CAPT && MAY_UNDO(h))
#define WAITS(h, k) (k == A_PCAP && rail[h] == R_PENDING || MONEY_CHECK(h, k) && rail[h] == R_PENDING)
#define OPEN(h, k) ((amb[h] & k) != 0 && !WAITS(h, k))
#define ANY_OPEN(h) (OPEN(h, A_IC) || OPEN(h, A_REV) || OPEN(h, A_CANC) || OPEN(h, A_PAUTH) || \
  OPEN(h, A_PREL) || OPEN(h, A_PCAP))

proctype Reconciler() {
  LOCALS;
  byte c, h, st, rs;
  bit ad, mu, wait;
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
      st = hst[h]; ad = hadm[h]; mu = MAY_UNDO(h); xop = X_NONE; pp = P_NONE; pa = 0; rc = 0; c = 0; wait = 0;
      gd = 0; gst = st; gad = ad; gpay = hpay[h];
      printf("MSC: reconciler: ambiguity %d of h%d, hold read as status %d admitted %d\n", rk, h, st, ad)
    };
    if
    :: rk == A_IC || rk == A_REV ->
      if
      :: st == H_AUTH -> xop = X_ROLLBACK
      :: st == H_CAPT && !ad -> xop = X_CANCEL
      :: else -> skip
      fi
    :: rk == A_CANC && st == H_CAPT && mu -> xop = X_CANCEL
    :: rk == A_CANC && !(st == H_CAPT && mu) -> skip
    :: (rk == A_PAUTH || rk == A_PREL) && st == H_CAPT && mu -> xop = X_CANCEL
    :: (rk == A_PAUTH || rk == A_PREL) && !(st == H_CAPT && mu) -> skip  /* terminal, or its settlement's */
    :: rk == A_PCAP ->
      rs = rail[h];
      printf("MSC: reconciler: rail settlement state of r%d is %d\n", h, rs);
      if
      :: rs == R_CAPT -> pp = P_CAPTURED
      :: rs == R_RELEASED -> pp = P_RELEASED
      :: rs == R_REFUNDED -> pp = P_REFUNDED
      :: rs == R_NONE || rs == R_DECLINED -> skip
      :: rs == R_PENDING -> wait = 1
      :: rs == R_AUTH && st == H_SETTLED && hreal[h] == 0 ->
        rail_release();
        if
        :: res == RR_RELEASED -> pp = P_RELEASED
        :: else -> wait = 1
        fi
      :: rs == R_AUTH && st == H_SETTLED && hreal[h] > 0 ->
        rail_capture();
        if
        :: res == RC_SETTLED -> pp = P_CAPTURED
        :: else -> wait = 1
        fi
      :: rs == R_AUTH && st != H_SETTLED -> wait = 1
      fi
    fi;
    if
    :: xop == X_ROLLBACK || xop == X_CANCEL -> gd = 1
    :: else -> skip
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
    fi;
    gd = 0
  od
}

/*
 * Once nothing can move, every hold is in a terminal state and the rail holds no money for a
 * hold whose budget came back: the final-state halves of holds_terminate and money_returned,
 * as a safety check (a fair liveness search does not see a run that simply stops).
 */
proctype Watchdog() {
  timeout -> assert(DONE(0) && DONE(1) && MONEY_SETTLED(0) && MONEY_SETTLED(1))
}
