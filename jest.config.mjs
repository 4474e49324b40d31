// One Jest run for the whole workspace, in ESM mode because Nest 12 ships only ES modules.
import { readFileSync } from 'node:fs';
import { swcOptions } from './tools/swc-options.mjs';

const paths = JSON.parse(readFileSync(new URL('./tsconfig.base.json', import.meta.url), 'utf8')).compilerOptions.paths;
const aliasMapper = Object.fromEntries(
  Object.entries(paths).map(([name, [target]]) => [
    `^${name.replace('/', '\\/')}$`,
    `<rootDir>/${target.replace(/^\.\//, '')}`,
  ]),
);

const swc = ['@swc/jest', swcOptions];

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
