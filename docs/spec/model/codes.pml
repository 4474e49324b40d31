/*
 * The codes of the model: hold and payment status, rail states and answers, ambiguities,
 * commands and operations. Part of hold-protocol.pml, which includes it.
 */

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

/* The hold's budget came back: undone, released, or settled at cost 0. */
#define BUDGET_BACK(h) \
  (hst[h] == H_REVERSED || hst[h] == H_CANCELLED || hst[h] == H_RELEASED || hst[h] == H_SETTLED && hreal[h] == 0)
/*
 * A completed settlement at cost 0 whose release the rail did not confirm books 0 (the call
 * did cost nothing) and records capture_failed with a payment_capture ambiguity: the ledger
 * shows the authorization as still owed back, and the reconciler releases it (ADR 0059).
 */
#define OWED_BACK(h) (hst[h] == H_SETTLED && hreal[h] == 0 && hpay[h] == P_CAPFAIL)
/* No money held at the rail for a hold whose budget came back. */
#define MONEY_SETTLED(h) (!(BUDGET_BACK(h) && MONEY_HELD(h)))

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
#define RJ_ADMITTED 3
#define W_WRITTEN 1
#define W_REJECTED 2
#define W_THROW 3

/* Settlement outcomes the orchestrator reports. */
#define OC_COMPLETED0 1
#define OC_COMPLETED1 2
#define OC_FAILED 3
#define OC_ELICIT 4
#define OC_NOTDISP 5
