// One Jest run for the whole workspace, in ESM mode because Nest 12 ships only ES modules.
import { readFileSync } from 'node:fs';

const paths = JSON.parse(readFileSync(new URL('./tsconfig.base.json', import.meta.url), 'utf8')).compilerOptions.paths;
const aliasMapper = Object.fromEntries(
  Object.entries(paths).map(([name, [target]]) => [
    `^${name.replace('/', '\\/')}$`,
    `<rootDir>/${target.replace(/^\.\//, '')}`,
  ]),
);

const swc = [
  '@swc/jest',
  {
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
    },
    module: { type: 'es6' },
  },
];

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: { ...aliasMapper, '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/{apps,libs,test}/**/*.spec.ts'],
  setupFiles: ['reflect-metadata'],
  testTimeout: 60000,
  maxWorkers: 2,
};
