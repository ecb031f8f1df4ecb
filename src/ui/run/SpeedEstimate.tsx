/** "Steps per second" before Run: measure the configuration's first steps and say what the whole run will take here. */
import { configToQuery } from '../../config/run-config.ts';
import { cannotRunReason } from '../../state/run/index.ts';
import { ESTIMATE_STEPS, estimateSpeed } from '../../state/run/index.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { duration, num } from '../timeline/format.ts';

export function SpeedEstimate() {
  const config = usePipeLab((s) => s.config);
  const speed = usePipeLab((s) => s.speed);
  usePipeLab((s) => [s.webgpu.state, s.configProblem?.message, s.session].join('|'));
  const mine = speed && speed.key === configToQuery(config) ? speed : null;
  const reason = cannotRunReason();
  return (
    <p className="muted small speed-estimate" data-testid="speed-estimate">
      {mine?.status === 'done' ? (
        <>
          About <b>{num(mine.stepsPerSecond, 2)} steps/s</b> on this device ({mine.adapter}), measured over {mine.measuredSteps} step{mine.measuredSteps === 1 ? '' : 's'}: {config.steps.toLocaleString('en-US')} steps ≈{' '}
          {duration((config.steps / mine.stepsPerSecond) * 1000)}.{' '}
        </>
      ) : mine?.status === 'measuring' ? (
        <>Measuring the first {ESTIMATE_STEPS} steps… </>
      ) : mine?.status === 'error' ? (
        <>The estimate failed: {mine.message} </>
      ) : (
        <>What will this run cost here? </>
      )}
      <button type="button" disabled={reason !== null || mine?.status === 'measuring'} onClick={() => void estimateSpeed()} title={reason ?? `Runs ${ESTIMATE_STEPS} steps of this configuration and times them`}>
        {mine?.status === 'done' ? 'Measure again' : 'Estimate steps per second'}
      </button>
    </p>
  );
}
