// The one swc configuration for Tally's TypeScript: the run-time loader (tools/ts-loader.mjs),
// the build (tools/build.mjs) and Jest compile with it, so what the tests run is what ships.
// Legacy decorators and their metadata are what Nest's dependency injection reads.
export const swcOptions = {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
  },
  module: { type: 'es6' },
};
