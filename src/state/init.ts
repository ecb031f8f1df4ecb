/**
 * Start-up: the URL's configuration into the store (naming every bad value),
 * WebGPU detection, and from then on every change of the configuration,
 * simulation parameters or view written back into the URL.
 */
import { checkRunConfig, checkSimParams } from './store/index.ts';
import { usePipeLab } from './store/index.ts';
import { readUrlState, urlQueryFor } from './store/index.ts';
import { detectWebGpu, webGpuForcedOff } from './store/index.ts';
import { prepareWhenWebGpuFound } from './run/index.ts';
import { holdLinkText } from './text/index.ts';

export function initStateFromUrl(): void {
  const { config, sim, compare, view, problems } = readUrlState(window.location.search);
  // A link to a run on a text this page does not have waits for the file (the data set's panel asks for it); its
  // problems are read once the text is in (text-source.ts), since every field is judged against that text.
  const waiting = holdLinkText(window.location.search);
  const shown = waiting ? [] : problems;
  usePipeLab.setState({ config, sim, compareParams: compare, view, urlProblems: shown, configProblem: checkRunConfig(config), simProblem: checkSimParams(sim) });

  if (webGpuForcedOff(window.location.search)) {
    usePipeLab.getState().setWebGpu({ state: 'unavailable', reason: 'no-api', detail: 'WebGPU is switched off by ?webgpu=off in the address.' });
  } else {
    // The first Run should not pay the workers' cold start: prepare them as soon as WebGPU is found.
    prepareWhenWebGpuFound();
    void detectWebGpu().then((s) => usePipeLab.getState().setWebGpu(s));
  }

  usePipeLab.subscribe((s, prev) => {
    if (s.config === prev.config && s.sim === prev.sim && s.view === prev.view && s.compareParams === prev.compareParams) return;
    // The link stays as it came while its text is asked for.
    if (s.text.pending) return;
    const keep = new URLSearchParams(window.location.search).get('webgpu');
    let q = urlQueryFor(s.config, s.sim, s.view, s.compareParams);
    if (keep !== null) q += `&webgpu=${encodeURIComponent(keep)}`;
    const url = `${window.location.pathname}?${q}${window.location.hash}`;
    window.history.replaceState(null, '', url);
  });
}
