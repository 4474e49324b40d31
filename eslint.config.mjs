// Lint is part of the test command. Its main job is architecture: Nx tags keep the
// domain pure (no Nest, TypeORM or NATS, no clock, no randomness) and keep layers apart.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

const infrastructure = [
  '@nestjs/*',
  'typeorm',
  '@nats-io/*',
  'pg',
  'better-sqlite3',
  'express',
  'node:*',
  'crypto',
  'fs',
  'http',
  'net',
  'class-validator',
  'class-transformer',
  'rxjs',
  'prom-client',
];

export default [
  { ignores: ['node_modules/**', 'dist/**', '.tally/**', 'tmp/**', '.nx/**', 'coverage/**', '**/*.mjs', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.property.name='forEach'] > :matches(ArrowFunctionExpression, FunctionExpression)[async=true]",
          message: 'forEach(async …) drops promises; use for…of or Promise.all.',
        },
      ],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:domain'],
              bannedExternalImports: infrastructure,
            },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:port', onlyDependOnLibsWithTags: ['type:contracts'] },
            {
              sourceTag: 'type:application',
              onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:contracts'],
              bannedExternalImports: ['@nestjs/*', 'typeorm', '@nats-io/*', 'pg', 'better-sqlite3'],
            },
            {
              sourceTag: 'type:platform',
              onlyDependOnLibsWithTags: ['type:platform', 'type:port', 'type:contracts', 'type:testing'],
            },
            // Projections are adapters that fold domain events into tables, so they may read the domain.
            {
              sourceTag: 'type:projection',
              onlyDependOnLibsWithTags: [
                'type:projection',
                'type:platform',
                'type:port',
                'type:contracts',
                'type:domain',
                'type:application',
              ],
            },
            {
              sourceTag: 'type:testing',
              onlyDependOnLibsWithTags: [
                'type:platform',
                'type:port',
                'type:contracts',
                'type:testing',
                'type:domain',
                'type:application',
              ],
            },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['*'] },
          ],
        },
      ],
    },
  },
  {
    // Domain code is pure: time and ids arrive on the command.
    files: ['libs/*/domain/src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Domain code takes time from the command.' },
        { object: 'Math', property: 'random', message: 'Domain code takes ids and randomness from the command.' },
        { object: 'crypto', property: 'randomUUID', message: 'Domain code takes ids from the command.' },
        { object: 'performance', property: 'now', message: 'Domain code takes time from the command.' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'Domain code takes time from the command.',
        },
        {
          selector: "CallExpression[callee.name='setTimeout'], CallExpression[callee.name='setInterval']",
          message: 'Domain code does no I/O or scheduling.',
        },
      ],
      'no-restricted-globals': ['error', 'fetch', 'process', 'crypto', 'setTimeout', 'setInterval'],
    },
  },
];
