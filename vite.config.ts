import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Relative base: dist/ works from any static host and any sub-path.
export default defineConfig({
  base: './',
  plugins: [react()],
  worker: { format: 'es' },
  assetsInclude: [],
  build: {
    target: 'es2022',
    sourcemap: true,
    // The playground, and the benchmark page that `npm run bench` drives (it alone loads TensorFlow.js).
    rollupOptions: { input: { main: 'index.html', bench: 'bench.html' } },
  },
  server: { host: '127.0.0.1', port: 5173 },
  preview: { host: '127.0.0.1', port: 4173 },
});
