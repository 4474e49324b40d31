export * from './nats-server.js';
