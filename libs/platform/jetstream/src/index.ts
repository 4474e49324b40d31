export * from './connection.js';
export * from './provisioning.js';
export * from './streams.js';
export * from './event-store.js';
export * from './append-with-redelivery.js';
export * from './dead-letter.js';
export * from './durable-consumer.js';
export * from './durability.js';
