// ESLint (flat config): typescript-eslint's recommended rules over the sources, tests and scripts.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['build/', 'dist/', 'coverage/', '.bench/', 'node_modules/', '.runtimes/', 'netlify/edge-functions/', 'cloudflare/', 'aws/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // Parsed JSON whose shape a check is about to validate is typed `any` on purpose.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Prettier wraps code at 140; only a message or help text, which it cannot break, may run longer.
      'max-len': ['error', { code: 160, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
    },
  },
  {
    // Emitted into hosts that run ES 5.1 (the CloudFront Function runtime), so `var` it is.
    files: ['src/hosting/routes/routing.js', 'src/hosting/hosts/cloudfront-handler.js'],
    rules: { 'no-var': 'off' },
  },
  {
    // Host code reads the Workers runtime's globals (Response, caches...).
    files: ['src/hosting/hosts/*-handler.js'],
    languageOptions: { globals: { ...globals.serviceworker } },
  },
);
