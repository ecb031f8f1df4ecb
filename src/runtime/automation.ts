/** window.pipelab: the automation entry for headless runs (filled in with the runtime). */
export function installAutomation(): void {
  (window as unknown as { pipelab: Record<string, unknown> }).pipelab = {};
}
