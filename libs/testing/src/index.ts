export * from './nats-server.js';
export * from './nats-cluster.js';
export * from './service-process.js';
export * from './scripted-provider.js';
export * from './namespace-cleanup.js';
export * from './stream-specs.js';
export * from './nats-auth.js';
export * from './oidc-issuer.js';
