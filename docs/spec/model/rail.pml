/*
 * The payment rail: idempotent by reference, with definite, failed and ambiguous answers.
 * Part of hold-protocol.pml, which includes it.
 */

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
    :: rail[h] != R_NONE && rail[h] != R_DECLINED ->
      res = RA_AUTHORIZED;
      printf("MSC: rail: authorize r%d again -> %d\n", h, res)
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


proctype Rail() {
end:
  do
  :: atomic { rail[0] == R_PENDING -> rail[0] = R_RELEASED }
  :: atomic { rail[1] == R_PENDING -> rail[1] = R_RELEASED }
  od
}
