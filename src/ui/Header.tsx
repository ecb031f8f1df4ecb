/** The title bar: name, the three views as tabs, and whether WebGPU is here. */
import { useRef, type KeyboardEvent } from 'react';
import { useOnboarding } from '../state/onboarding.ts';
import { usePipeLab, VIEWS, type View } from '../state/store/index.ts';

const VIEW_LABELS: Record<View, string> = { run: 'Train', compare: 'Compare schedules', simulate: 'Simulate at scale' };

export function Header() {
  const view = usePipeLab((s) => s.view);
  const setView = usePipeLab((s) => s.setView);
  const webgpu = usePipeLab((s) => s.webgpu);
  const tabs = useRef<(HTMLButtonElement | null)[]>([]);
  const introOpen = useOnboarding((s) => s.introOpen);
  const openIntro = useOnboarding((s) => s.openIntro);

  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const i = VIEWS.indexOf(view);
    let next = -1;
    if (e.key === 'ArrowRight') next = (i + 1) % VIEWS.length;
    else if (e.key === 'ArrowLeft') next = (i + VIEWS.length - 1) % VIEWS.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = VIEWS.length - 1;
    if (next < 0) return;
    e.preventDefault();
    setView(VIEWS[next]);
    tabs.current[next]?.focus();
  };

  return (
    <header className="topbar">
      <div className="brand">
        <svg className="logo" viewBox="0 0 32 32" aria-hidden="true">
          <rect x="2" y="5" width="12" height="6" rx="1.5" fill="#5b9cff" />
          <rect x="9" y="13" width="12" height="6" rx="1.5" fill="#5b9cff" opacity="0.8" />
          <rect x="16" y="21" width="12" height="6" rx="1.5" fill="#ff9f43" />
        </svg>
        <div>
          <h1>PipeLab</h1>
          <p className="tagline">pipeline-parallel training in your browser</p>
        </div>
      </div>
      <div className="tabs" role="tablist" aria-label="Views" onKeyDown={onKey}>
        {VIEWS.map((v, i) => (
          <button
            key={v}
            ref={(el) => {
              tabs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`tab-${v}`}
            aria-selected={view === v}
            aria-controls={`view-${v}`}
            tabIndex={view === v ? 0 : -1}
            className={view === v ? 'on' : ''}
            onClick={() => setView(v)}
          >
            {VIEW_LABELS[v]}
          </button>
        ))}
      </div>
      {(!introOpen || view !== 'run') && (
        <button
          type="button"
          className="help-button"
          onClick={() => {
            openIntro();
            setView('run');
          }}
        >
          What is this?
        </button>
      )}
      <div className={`gpu-badge ${webgpu.state}`} title={webgpu.state === 'unavailable' ? webgpu.detail : undefined}>
        <span className="dot" aria-hidden="true" />
        {webgpu.state === 'checking' && 'Looking for WebGPU…'}
        {webgpu.state === 'available' && <>WebGPU: {webgpu.adapter}</>}
        {webgpu.state === 'unavailable' && 'No WebGPU: simulation only'}
      </div>
    </header>
  );
}
