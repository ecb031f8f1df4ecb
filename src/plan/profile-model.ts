/**
 * Which model a profile was measured on. A profile's times are per block of
 * one model; planning another model with them (or a profile that lost blocks
 * on the way) would cut and schedule the wrong thing, so a profile carries its
 * model's name, a digest of its spec (CRC-32 of the spec's JSON) and its block
 * count, written by `train.py --profile` (the exporter puts the same value in
 * config.json; the tab's profiling pass measures the model in front of it and
 * writes none), and the Plan panel refuses a pasted profile of another model,
 * naming both.
 */
import { paramCount, type ModelSpec } from '../nn/model-spec.ts';
import { ConfigError } from '../util/errors.ts';
import { crc32 } from '../util/crc32.ts';
import type { Profile, ProfileModel } from './profile.ts';

export function profileModelOf(spec: ModelSpec): ProfileModel {
  const digest = crc32(new TextEncoder().encode(JSON.stringify(spec))).toString(16).padStart(8, '0');
  return { name: `${spec.name} (${spec.blocks.length} blocks, ${paramCount(spec)} parameters)`, digest, blocks: spec.blocks.length };
}

/** Throws a ConfigError when `profile` was not measured on `spec`'s model (or lists another number of blocks). */
export function checkProfileModel(profile: Profile, spec: ModelSpec): void {
  const mine = profileModelOf(spec);
  const theirs = profile.model;
  if (theirs && theirs.digest !== mine.digest) {
    throw new ConfigError(
      'profile.model',
      theirs.name,
      `was measured on another model (digest ${theirs.digest}) than the one planned, ${mine.name} (digest ${mine.digest}): profile this model (train.py --profile, or the page's profiling pass) and plan again`,
    );
  }
  if (profile.blocks.length !== mine.blocks) {
    throw new ConfigError('profile.blocks.length', profile.blocks.length, `the model planned, ${mine.name}, has ${mine.blocks} blocks: the profile needs one entry per block`);
  }
}
