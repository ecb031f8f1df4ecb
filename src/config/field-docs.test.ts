/**
 * Each configuration field is described once (src/config/field-docs.ts) and
 * that one description is what the CLI's --help, the page's tooltips and
 * docs/configuration.md say: a field without an entry, an entry for no field,
 * a help line that is only a placeholder, or a stale docs page fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXPORT_TORCH_HELP } from '../cli/export-torch-command.ts';
import { DATASETS } from '../data/datasets.ts';
import { GLOSSARY } from '../ui/onboarding/Glossary.tsx';
import { configurationMarkdown, FIELD_DOCS, glossaryMarkdown } from './field-docs.ts';
import { defaultRunConfig, URL_FIELDS, withDataset } from './run-config.ts';

const documented = new Set(Object.keys(FIELD_DOCS));

describe('the one table of configuration fields', () => {
  it('covers every field a configuration of any data set has, every URL field and the fault; and nothing else', () => {
    const fields = new Set<string>([...URL_FIELDS, 'fault']);
    for (const d of DATASETS) for (const k of Object.keys(withDataset(defaultRunConfig(), d, d === 'text' ? '0123456789abcdef' : undefined))) fields.add(k);
    expect([...fields].filter((f) => !documented.has(f)), 'fields without a description').toEqual([]);
    expect([...documented].filter((f) => !fields.has(f)), 'descriptions of no field').toEqual([]);
    for (const [f, d] of Object.entries(FIELD_DOCS)) {
      expect(d.about.length, f).toBeGreaterThan(15);
      expect(d.values.length, f).toBeGreaterThan(2);
    }
  });

  it('is what export-torch --help says of every flag: no placeholder left', () => {
    expect(EXPORT_TORCH_HELP).not.toMatch(/run configuration field/);
    for (const f of URL_FIELDS) {
      const line = EXPORT_TORCH_HELP.split('\n').find((l) => l.trimStart().startsWith(`--${f} `));
      expect(line, `--${f}`).toBeDefined();
      expect(line).toContain(FIELD_DOCS[f].about);
    }
  });

  it('is what docs/configuration.md says (regenerate with node --import tsx scripts/gen-docs.ts)', () => {
    const committed = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(committed).toBe(configurationMarkdown(defaultRunConfig()));
    for (const f of documented) expect(committed).toContain(`| \`${f}\` |`);
  });

  it('docs/glossary.md is the page\'s glossary', () => {
    expect(readFileSync(new URL('../../docs/glossary.md', import.meta.url), 'utf8')).toBe(glossaryMarkdown(GLOSSARY));
    expect(GLOSSARY.length).toBeGreaterThan(5);
  });
});
