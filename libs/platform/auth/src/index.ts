export * from './access.js';
export * from './principal.js';
export * from './operator-keys.js';
export * from './credentials.js';
export * from './authenticator.js';
export * from './access.guard.js';
export * from './oidc-verifier.js';
export * from './message-signatures.js';
