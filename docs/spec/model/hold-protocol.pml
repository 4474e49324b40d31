/*
 * The hold protocol of the budget authority, as the code runs it: Admit (authorize,
 * capture, payment, allow), Settle, the expiry sweep (B20) and the reconciler (B21), over
 * one delegation tree whose stream is the single source of truth. README.md (next to this
 * file) says which B rules each property covers and how to run the checks.
 *
 * The parts are in the files it includes: codes.pml, store.pml, rail.pml, admit.pml, actors.pml.
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
 *   NO_ZERO_RELEASE_FAULT  leaves out the trigger of finding F3 (fixed, ADR 0059): the release
 *              of a settlement completed at cost 0 always succeeds.
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

#include "codes.pml"

/* ---- the stream's truth: every tree state is a fold of its commits ---- */
byte hst[2];
bit hadm[2];
byte hby[2];      /* the command that authorized the hold (Hold.command_id) */
byte hcb[2];      /* the command that captured it (Hold.captured_by, ADR 0058) */
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

/* resumeCaptured: only the command whose run captured the hold goes on from it (F1). */
#define RESUMABLE(h, c) (hcb[h] == c && hst[h] == H_CAPT && !hadm[h])
/* Faults strike the flows of r0 (and its twin); r1 is the competing request that always gets through. */
#define FAULT (faults > 0 && h == 0)
#define CRASH if :: atomic { FAULT -> faults--; printf("MSC: run of cmd%d crashed\n", c) }; goto gone :: true fi

#ifdef BROKEN_CAPTURE_NO_EXPECTED_SEQ
#define STALE_OP (xop == X_AUTH || xop == X_CAPT || xop == X_AUTHCAPT)
#else
#define STALE_OP false
#endif

#include "store.pml"
#include "rail.pml"
#include "admit.pml"
#include "actors.pml"

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

/* B9, B21: budget comes back only for a hold the rail holds no money for, or that the ledger shows it owes back. */
ltl money_before_budget {
  [] (!(BUDGET_BACK(0) && MONEY_HELD(0) && !OWED_BACK(0)) && !(BUDGET_BACK(1) && MONEY_HELD(1) && !OWED_BACK(1)))
}

/* B21 (ADR 0059): once faults stop, the rail holds no money for a hold whose budget came back. */
ltl money_returned {
  <> [] (MONEY_SETTLED(0) && MONEY_SETTLED(1))
}
