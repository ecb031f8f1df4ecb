/** A profile names its model: one of another model, or one that lost blocks, is refused naming what is wrong. */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { ConfigError } from '../util/errors.ts';
import { modelSpecOf } from '../runtime/measure-profile.ts';
import { checkProfileModel, profileModelOf } from './profile-model.ts';
import { parseProfile, profileFromJson, profileToJson, type Profile } from './profile.ts';

const cfg: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 16 };
const spec = modelSpecOf(cfg);
const n = spec.blocks.length;
const profile: Profile = parseProfile({
  version: 1,
  unit: 'ms',
  blocks: spec.blocks.map((b, i) => ({ name: b.name, F: 1 + i, I: 1, W: 1, heldBytes: 100 })),
  comm: new Array<number>(n - 1).fill(0.5),
  model: profileModelOf(spec),
});

describe('the model a profile was measured on', () => {
  it('round-trips through profileToJson and passes for its own model', () => {
    const back = profileFromJson(profileToJson(profile));
    expect(back.model).toEqual(profileModelOf(spec));
    expect(() => checkProfileModel(back, spec)).not.toThrow();
  });

  it('differs between models that differ in one size, and names both', () => {
    const other = modelSpecOf({ ...cfg, hidden: 17 });
    expect(profileModelOf(other).digest).not.toBe(profileModelOf(spec).digest);
    expect(() => checkProfileModel(profile, other)).toThrow(ConfigError);
    expect(() => checkProfileModel(profile, other)).toThrow(new RegExp(`was measured on another model \\(digest ${profileModelOf(spec).digest}\\).*digest ${profileModelOf(other).digest}`));
  });

  it('refuses a truncated profile naming the missing blocks', () => {
    const json = JSON.parse(profileToJson(profile)) as { blocks: unknown[]; comm: number[] };
    const cut = { ...json, blocks: json.blocks.slice(0, 2), comm: json.comm.slice(0, 1) };
    expect(() => parseProfile(cut)).toThrow(`profile.blocks.length = 2: profile.model says ${profile.model?.name} has ${n} blocks; blocks 2–${n - 1} are missing (a truncated profile?)`);
  });

  it('refuses a model entry without a digest, naming the field', () => {
    expect(() => parseProfile({ ...JSON.parse(profileToJson(profile)), model: { name: 'x', blocks: n } })).toThrow(/profile\.model\.digest = undefined/);
  });
});
