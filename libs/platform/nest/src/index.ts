export * from './wire.js';
export * from './options.js';
export * from './reply-cache.js';
export * from './validation-pipe.js';
export * from './command-context.js';
export * from './command-server.js';
export * from './command-client.js';
export * from './command-client-proxy.js';
