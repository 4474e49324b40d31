export * from './directory-events.dtos.js';
export * from './directory-state.js';
export * from './directory-view.js';
export * from './directory-commands.js';
export * from './published-keys.js';
export * from './capability-tokens.js';
export * from './directory-runtime.js';
