/**
 * The dedicated worker of probePageAndWorker (adapter-probe.ts): probes the
 * worker's own adapter and device and posts the result back.
 */
import { probeAdapter, type ProbeOptions } from './adapter-probe.ts';

self.onmessage = async (e: MessageEvent<Omit<ProbeOptions, 'gpu'>>) => {
  self.postMessage(await probeAdapter('worker', e.data));
};
