export * from './event-store.port.js';
export * from './decide-and-append.js';
