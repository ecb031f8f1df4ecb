/**
 * Test support: one device's float64 CPU run of a training configuration, trained once per test file and shared by
 * the cases that compare against the same configuration (a pipeline's schedule, mesh and ZeRO stage are not part of
 * TrainConfig: many cases have one reference). The run is deterministic, so the shared result is the one each case
 * would have trained itself. Callers must not write into the result.
 */
import { CpuBackend } from '../cpu-backend.ts';
import { trainSingleDevice } from '../train.ts';
import type { TrainConfig } from '../train-config.ts';

const runs = new Map<string, ReturnType<typeof trainSingleDevice>>();

export function oneDeviceRun(cfg: TrainConfig): ReturnType<typeof trainSingleDevice> {
  const key = JSON.stringify(cfg);
  let run = runs.get(key);
  if (!run) runs.set(key, (run = trainSingleDevice(new CpuBackend(), cfg)));
  return run;
}
