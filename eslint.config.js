// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.listsync/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Buffer: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through src/config.ts.' }],
    },
  },
  {
    // Unknown errors are coerced once (src/errors.ts coerceError), never cast: a thrown string or object has no .message.
    files: ['src/**/*.ts', 'jobs/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "TSAsExpression[typeAnnotation.typeName.name='Error']",
          message: 'Use coerceError(err) from src/errors.ts instead of casting to Error.',
        },
        {
          selector: "TSTypeAssertion[typeAnnotation.typeName.name='Error']",
          message: 'Use coerceError(err) from src/errors.ts instead of casting to Error.',
        },
      ],
    },
  },
  {
    // The one place that reads the environment, plus the test harness, benchmarks and the bin shim.
    files: ['src/config.ts', 'test/**', 'bench/**', 'bin/**', 'vitest.config.ts', 'knexfile.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
