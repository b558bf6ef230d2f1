import { defineConfig } from 'vitest/config';

// The build must be reproducible byte for byte (CI rebuilds web/dist and fails on a diff):
// content hashes only, no timestamps, no inline script (the server's CSP forbids it).
export default defineConfig({
  base: '/',
  oxc: {
    jsx: { runtime: 'automatic', importSource: 'preact' },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: 'es2022',
  },
  server: {
    proxy: {
      '/graphql': { target: process.env.FLYTRAP_URL || 'http://127.0.0.1:8080', ws: true },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
