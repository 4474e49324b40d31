// Proves with spin that the Promela model of the hold protocol (docs/spec/model) keeps its LTL properties in every interleaving within its bounds, that its broken variants fail them, that the fixed findings F1, F2 (ADR 0058) and F3 (ADR 0059) hold, and that F2's shape with the reconciler still has a counterexample.
import { afterAll, describe, expect, it } from '@jest/globals';
import { requireTools, SpinRunner, type Check, type Verdict } from './spin-runner.js';

const MODEL = 'docs/spec/model/hold-protocol.pml';
/** Each search here needs well under 200 MB; a bigger one is a sign the model grew, and fails. */
const spin = new SpinRunner(MODEL, { memoryMb: 1024, depthMax: 100_000, stepTimeoutMs: 120_000 });
const TEST_TIMEOUT_MS = 180_000;
afterAll(() => spin.dispose());

let toolsChecked = false;
function verify(check: Check): Verdict {
  if (!toolsChecked) requireTools();
  toolsChecked = true;
  return spin.check(check);
}

/** Errors: 0 from a search that visited every reachable state. */
function expectHolds(verdict: Verdict): void {
  if (verdict.errors !== 0 || !verdict.complete)
    throw new Error(`spin: errors ${verdict.errors}, complete search ${verdict.complete}:\n${verdict.output}`);
  expect(verdict.statesStored).toBeGreaterThan(0);
}

/** A counterexample to the property's own formula (not some other assert of the model). */
function expectCounterexample(verdict: Verdict): void {
  expect(verdict.errors).toBeGreaterThanOrEqual(1);
  expect(verdict.claimViolated).toBe(true);
}

/** The trigger of finding F2, left out wherever the other guarantees are checked (F3's is in since its fix, ADR 0059). */
const WITHOUT_FINDINGS = ['-DFRESH_RERUNS'];

interface Configuration {
  readonly label: string;
  readonly defines: readonly string[];
  /** A smaller bound for the liveness search, when weak fairness makes the full one too slow. */
  readonly liveness?: { readonly label: string; readonly defines: readonly string[] };
}

const CONFIGURATIONS: readonly Configuration[] = [
  { label: 'authorize and capture in one commit, 3 faults', defines: ['-DFAULTS=3', ...WITHOUT_FINDINGS] },
  {
    label: 'the capture in its own commit, with the expiry sweep, 3 faults',
    defines: ['-DFAULTS=3', '-DSTEPWISE', ...WITHOUT_FINDINGS],
  },
  {
    label: 'with an identical request beside it, 1 fault',
    defines: ['-DFAULTS=1', '-DTWIN', ...WITHOUT_FINDINGS],
    // With 1 fault the fair search takes about 12 s of CPU; the safety runs above already check its final states.
    liveness: {
      label: 'with an identical request beside it, no faults',
      defines: ['-DFAULTS=0', '-DTWIN', ...WITHOUT_FINDINGS],
    },
  },
];

const PROPERTIES = [
  {
    ltl: 'no_double_capture',
    claim: 'B2 B8 a hold is captured at most once in the ledger and at the rail, and its call is made once',
  },
  {
    ltl: 'no_overspend',
    claim: 'B1 B19 committed and invocations never exceed the grant, in the ledger or in the calls made',
  },
  {
    ltl: 'money_before_budget',
    claim:
      'B9 B21 budget comes back only for a hold the rail holds no money for, or that the ledger shows is owed back',
  },
  {
    ltl: 'money_returned',
    claim:
      'B21 ADR 0059 once faults stop, the rail holds no money for a hold whose budget came back, under weak fairness',
    liveness: true,
  },
  {
    ltl: 'holds_terminate',
    claim: 'B20 B21 once faults stop, every hold ends in exactly one terminal state, under weak fairness',
    liveness: true,
  },
];

describe('The hold protocol, model-checked: every property in every interleaving within the bounds', () => {
  for (const configuration of CONFIGURATIONS)
    for (const property of PROPERTIES) {
      const bound = (property.liveness && configuration.liveness) || configuration;
      it(
        `${property.claim} (${bound.label})`,
        () => {
          expectHolds(verify({ defines: bound.defines, property: property.ltl, liveness: property.liveness }));
        },
        TEST_TIMEOUT_MS,
      );
    }
});

describe('The broken variants of the model fail', () => {
  it(
    'B19 appends that skip the expected last sequence overspend the grant: spin finds the counterexample',
    () => {
      const defines = ['-DFAULTS=1', '-DBROKEN_CAPTURE_NO_EXPECTED_SEQ', ...WITHOUT_FINDINGS];
      expectCounterexample(verify({ defines, property: 'no_overspend' }));
      // The duplicate window alone still keeps one hold from being captured twice.
      expectHolds(verify({ defines, property: 'no_double_capture' }));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'B9 a settlement that takes a lost release acknowledgement for a release gives budget back while the rail holds money',
    () => {
      const defines = ['-DFAULTS=1', '-DBROKEN_RELEASE_ON_LOST_ACK', ...WITHOUT_FINDINGS];
      expectCounterexample(verify({ defines, property: 'money_before_budget' }));
    },
    TEST_TIMEOUT_MS,
  );
});

describe('Findings in the code (docs/spec/model/README.md): counterexamples until they are fixed, checks once they are', () => {
  it(
    'F1 B8 fixed: with the capture in its own commit, two identical requests get one allow and one call under their hold',
    () => {
      const defines = ['-DFAULTS=0', '-DSTEPWISE', '-DTWIN', ...WITHOUT_FINDINGS];
      expectHolds(verify({ defines, property: 'no_double_capture' }));
      expectHolds(verify({ defines, property: 'no_overspend' }));
      expectHolds(verify({ defines }));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'F2 B20 fixed: a re-sent Admit whose command was already denied never leaves a hold that nothing ends (2 faults, re-sends overtaking runs)',
    () => {
      const defines = ['-DFAULTS=2', '-DNO_ZERO_RELEASE_FAULT'];
      // The watchdog's assert: no state where nothing can move with a hold not terminal.
      expectHolds(verify({ defines }));
      expectHolds(verify({ defines, property: 'no_double_capture' }));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'F2 with the reconciler in between, B9 B21: a re-send at the rail after the reconciler read it gives budget back while the rail holds the authorization, until it is fixed',
    () => {
      const defines = ['-DFAULTS=2', '-DNO_ZERO_RELEASE_FAULT'];
      expectCounterexample(verify({ defines, property: 'money_before_budget' }));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'F3 B21 fixed (ADR 0059): a completed settlement at cost 0 whose release fails books 0, and the reconciler releases the authorization the rail kept',
    () => {
      const defines = ['-DFAULTS=1', '-DFRESH_RERUNS'];
      expectHolds(verify({ defines, property: 'money_before_budget' }));
      expectHolds(verify({ defines, property: 'money_returned', liveness: true }));
    },
    TEST_TIMEOUT_MS,
  );
});
