/**
 * What a person without WebGPU sees: why training is off, how to turn WebGPU
 * on (Chrome on Linux included), and that simulation still works.
 */
import type { WebGpuSupport } from '../state/store/index.ts';

export function NoWebGpuNotice({ support, onSimulate }: { support: Extract<WebGpuSupport, { state: 'unavailable' }>; onSimulate: () => void }) {
  return (
    <section className="notice" aria-labelledby="no-webgpu-title">
      <h2 id="no-webgpu-title">WebGPU is not available here, so training is off</h2>
      <p>
        {support.detail} PipeLab trains a real network on your GPU through WebGPU, one worker per pipeline rank.{' '}
        <strong>Simulation still works</strong>: every schedule, at any size, from the cost model.
      </p>
      <button type="button" className="primary" onClick={onSimulate}>
        Open the simulator
      </button>
      <details open>
        <summary>How to turn WebGPU on</summary>
        <ul>
          <li>
            <b>Chrome or Edge 113+ on Windows, macOS, ChromeOS</b>: on by default. Update the browser, and check
            <code>chrome://gpu</code> says “WebGPU: Hardware accelerated”.
          </li>
          <li>
            <b>Chrome on Linux</b>: open <code>chrome://flags</code>, enable <code>#enable-unsafe-webgpu</code> (Unsafe WebGPU
            Support) and <code>#enable-vulkan</code>, then relaunch. Or start it with{' '}
            <code>
              <span className="flag">google-chrome</span> <span className="flag">--enable-unsafe-webgpu</span> <span className="flag">--enable-features=Vulkan</span>
            </code>. Without a GPU driver, add{' '}
            <code className="flag">--use-webgpu-adapter=swiftshader</code> for the (slow) software adapter.
          </li>
          <li>
            <b>Firefox</b>: WebGPU ships in recent releases on Windows and macOS; elsewhere set <code>dom.webgpu.enabled</code> to
            true in <code>about:config</code> (or use Nightly).
          </li>
          <li>
            <b>Safari</b>: Safari 26 has WebGPU; on older versions enable it under Develop → Feature Flags.
          </li>
          <li>
            WebGPU needs a secure context: open this page over <code>https://</code> or from <code>localhost</code>.
          </li>
        </ul>
      </details>
    </section>
  );
}
