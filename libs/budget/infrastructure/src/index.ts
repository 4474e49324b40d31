// Budget infrastructure: the Ed25519 signer, the simulated and HTTP payment rails and the
// lost-acknowledgement event-store decorator used by fault-injection tests.
export * from './canonical-json.js';
export * from './ed25519-signer.js';
export * from './simulated-payment-rail.js';
export * from './http-payment-rail.js';
export * from './lost-ack-event-store.js';
export * from './signing-keyring.js';
