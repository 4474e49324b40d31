export * from './config.schema.js';
export * from './config.loader.js';
export * from './json-logger.js';
export * from './health.js';
export * from './problem.js';
export * from './boot.js';
export * from './nats-runtime.js';
