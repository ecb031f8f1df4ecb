/**
 * How PipeLab finds and starts Chromium for tests and benchmarks: the system
 * Chromium by default, or the executable named by PIPELAB_CHROMIUM (e.g. your
 * own Chrome). WebGPU needs --enable-unsafe-webgpu on Linux; the SwiftShader
 * flags make it work on machines without a GPU.
 */
import { existsSync } from 'node:fs';

export function chromiumExecutable(): string {
  const fromEnv = process.env.PIPELAB_CHROMIUM;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`PIPELAB_CHROMIUM = ${JSON.stringify(fromEnv)}: no such file; it must name a Chromium or Chrome executable`);
    return fromEnv;
  }
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']) {
    if (existsSync(p)) return p;
  }
  throw new Error('No Chromium found: install it (Debian: apt-get install -y chromium) or set PIPELAB_CHROMIUM to a Chrome/Chromium executable');
}

export function chromiumArgs(): string[] {
  const args = [
    '--no-sandbox',
    '--enable-unsafe-webgpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
    '--disable-sync',
    '--disable-quic',
  ];
  // Software WebGPU (SwiftShader) unless the caller says the machine has a real GPU.
  if (process.env.PIPELAB_REAL_GPU !== '1') {
    args.push('--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--disable-vulkan-surface');
  }
  return args;
}

export function chromiumLaunchOptions(): { executablePath: string; args: string[] } {
  return { executablePath: chromiumExecutable(), args: chromiumArgs() };
}
