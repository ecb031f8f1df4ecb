/** What the trained model learned: the decision boundary (2-D sets) or fresh names (names). */
import { isTwoD } from '../../data/datasets.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { DecisionBoundary } from './DecisionBoundary.tsx';
import { SampledNames } from './SampledNames.tsx';
import { AttentionPatternsView } from './AttentionPatternsView.tsx';
import { SampledText } from '../text/SampledText.tsx';

export function ResultsPanel() {
  const boundary = usePipeLab((s) => s.boundary);
  const names = usePipeLab((s) => s.names);
  const report = usePipeLab((s) => s.report);
  const dataset = usePipeLab((s) => (s.run.config ?? s.config).dataset);
  const twoD = isTwoD(dataset);
  if (dataset === 'text') {
    return (
      <section className="panel" aria-labelledby="results-title" data-testid="results">
        <h2 id="results-title">Sampled text</h2>
        <SampledText />
      </section>
    );
  }
  return (
    <section className="panel" aria-labelledby="results-title" data-testid="results">
      <h2 id="results-title">{twoD ? 'Decision boundary' : 'Freshly sampled names'}</h2>
      {twoD && boundary && <DecisionBoundary grid={boundary} />}
      {!twoD && names && <SampledNames names={names} />}
      {!twoD && names && report?.config.model === 'gpt' && report.weights && names.some((n) => n.length > 0) && (
        <AttentionPatternsView config={report.config} weights={report.weights} name={names.find((n) => n.length > 0) as string} />
      )}
      {!(twoD ? boundary : names) && (
        <p className="muted">{report ? 'Reading the trained weights…' : twoD ? 'After a run, the trained model’s decision regions appear here.' : 'After a run, names the model makes up appear here.'}</p>
      )}
    </section>
  );
}
