// Writes docs/configuration.md from src/config/field-docs.ts (src/config/field-docs.test.ts fails when it is out of date).
// Run: node --import tsx scripts/gen-config-docs.ts
import { writeFileSync } from 'node:fs';
import { configurationMarkdown } from '../src/config/field-docs.ts';
import { defaultRunConfig } from '../src/config/run-config.ts';

const path = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(path, configurationMarkdown(defaultRunConfig()));
console.log(`wrote ${path.pathname}`);
