/**
 * The page prepares its workers when it loads: once WebGPU is found and the
 * configuration is valid, the configuration's ranks start, acquire their
 * devices and compile the kernels its steps use (prepareWorkers), then wait
 * warm, so the first Run starts in a fraction of a second rather than paying
 * the cold start. The status line says what is happening. Automation
 * (navigator.webdriver: Playwright, the benchmark) drives its own
 * configurations and is not prepared for; it asks with
 * window.pipelab.prepareWorkers().
 */
import { prepareWorkers } from '../../runtime/browser-run.ts';
import { usePipeLab } from '../store/index.ts';

export type { WorkersReadiness } from '../store/index.ts';

/** Whether the page prepares workers by itself (not under automation). */
export function preparesOnLoad(nav: { webdriver?: boolean } = navigator): boolean {
  return !nav.webdriver;
}

/** Prepares the workers for the current configuration, recording progress in the store; does nothing while a session holds the workers. */
export async function prepareForCurrentConfig(): Promise<void> {
  const s = usePipeLab.getState();
  if (s.session !== 'idle' || s.configProblem || s.webgpu.state !== 'available') return;
  // One worker per place of the mesh: dp replicas × ep × tp × ranks.
  const ranks = s.config.dp * (s.config.ep ?? 1) * (s.config.tp ?? 1) * s.config.ranks;
  const t0 = performance.now();
  usePipeLab.setState({ workers: { state: 'preparing', ranks } });
  try {
    const { kept } = await prepareWorkers(s.config);
    usePipeLab.setState({ workers: kept > 0 ? { state: 'ready', ranks: kept, ms: performance.now() - t0 } : { state: 'cold' } });
  } catch (e) {
    // Not fatal: the first Run starts its workers itself, and says what fails.
    usePipeLab.setState({ workers: { state: 'failed', reason: e instanceof Error ? e.message : String(e) } });
  }
}

/** Prepares once, when WebGPU is first found available (unless under automation). */
export function prepareWhenWebGpuFound(): void {
  if (!preparesOnLoad()) return;
  const unsubscribe = usePipeLab.subscribe((s) => {
    if (s.webgpu.state === 'checking') return;
    unsubscribe();
    if (s.webgpu.state === 'available') void prepareForCurrentConfig();
  });
}
