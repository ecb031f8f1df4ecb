#!/usr/bin/env node
// The `pipelab` command: runs src/cli/main.ts under tsx, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/main.ts');
process.exitCode = runCli(process.argv.slice(2));
