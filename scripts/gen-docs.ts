// Writes the docs pages generated from the code: docs/configuration.md (src/config/field-docs.ts) and
// docs/glossary.md (the page's glossary, src/ui/onboarding/Glossary.tsx). src/config/field-docs.test.ts
// fails when either is out of date. Run: node --import tsx scripts/gen-docs.ts
import { writeFileSync } from 'node:fs';
import { configurationMarkdown, glossaryMarkdown } from '../src/config/field-docs.ts';
import { defaultRunConfig } from '../src/config/run-config.ts';
import { GLOSSARY } from '../src/ui/onboarding/Glossary.tsx';

for (const [name, text] of [
  ['configuration.md', configurationMarkdown(defaultRunConfig())],
  ['glossary.md', glossaryMarkdown(GLOSSARY)],
] as const) {
  const path = new URL(`../docs/${name}`, import.meta.url);
  writeFileSync(path, text);
  console.log(`wrote ${path.pathname}`);
}
