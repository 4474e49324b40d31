// Canonical JSON lives in the contracts now (the receipt chain and offline verifiers use it too).
export { canonicalJson } from '@tally/contracts';
