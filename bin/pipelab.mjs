#!/usr/bin/env node
// The `pipelab` command: runs src/cli/main.ts under tsx, so no build step is needed.
import { register } from 'tsx/esm/api';

// A reader that stops early (`pipelab schedule ... | head`) closes the pipe: end quietly, as Unix tools do.
process.stdout.on('error', (e) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(process.exitCode ?? 0);
});

register();
const { runCli } = await import('../src/cli/main.ts');
process.exitCode = runCli(process.argv.slice(2));
