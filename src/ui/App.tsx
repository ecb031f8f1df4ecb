/** The page: title bar with the views, the view, and the run status line. */
import { usePipeLab } from '../state/store.ts';
import { CompareView } from './compare/CompareView.tsx';
import { Header } from './Header.tsx';
import { RunView } from './run/RunView.tsx';
import { SimulateView } from './simulate/SimulateView.tsx';
import { StatusRegion } from './StatusRegion.tsx';
import { UrlProblems } from './UrlProblems.tsx';

export function App() {
  const view = usePipeLab((s) => s.view);
  return (
    <div className="app">
      <Header />
      <UrlProblems />
      <main id={`view-${view}`} role="tabpanel" aria-labelledby={`tab-${view}`}>
        {view === 'run' && <RunView />}
        {view === 'compare' && <CompareView />}
        {view === 'simulate' && <SimulateView />}
      </main>
      <StatusRegion />
    </div>
  );
}
