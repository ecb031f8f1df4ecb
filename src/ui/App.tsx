/** The page: skip link, title bar with the views, the first-visit explanation, the view, and the run status line. */
import { useEffect } from 'react';
import { usePipeLab } from '../state/store/index.ts';
import { CompareView } from './compare/CompareView.tsx';
import { Header } from './Header.tsx';
import { onShortcutKey } from './run/run-shortcut.ts';
import { RunView } from './run/RunView.tsx';
import { SimulateView } from './simulate/SimulateView.tsx';
import { StatusRegion } from './StatusRegion.tsx';
import { UrlProblems } from './UrlProblems.tsx';

export function App() {
  const view = usePipeLab((s) => s.view);
  useEffect(() => {
    window.addEventListener('keydown', onShortcutKey);
    return () => window.removeEventListener('keydown', onShortcutKey);
  }, []);
  return (
    <div className="app">
      <a className="skip-link" href={view === 'run' ? '#run-controls' : `#view-${view}`}>
        {view === 'run' ? 'Skip to the run controls' : 'Skip to the view'}
      </a>
      <Header />
      <UrlProblems />
      <main id={`view-${view}`} tabIndex={-1} role="tabpanel" aria-labelledby={`tab-${view}`}>
        {view === 'run' && <RunView />}
        {view === 'compare' && <CompareView />}
        {view === 'simulate' && <SimulateView />}
      </main>
      <StatusRegion />
    </div>
  );
}
