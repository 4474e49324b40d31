export * from './connection.js';
export * from './provisioning.js';
export * from './event-store.js';
export * from './dead-letter.js';
