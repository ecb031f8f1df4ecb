/**
 * The first-visit explanation: what the page does in three sentences, the
 * presets that each teach one thing, and the glossary. Dismissed, it stays
 * closed on later visits; "What is this?" in the title bar opens it again.
 */
import type { MouseEvent } from 'react';
import type { RunConfig } from '../../config/run-config.ts';
import { setConfig } from '../../state/store/index.ts';
import { useOnboarding } from '../../state/onboarding.ts';
import { PRESETS, presetQuery, type PresetLink } from '../../state/presets.ts';
import { isActive, usePipeLab } from '../../state/store/index.ts';
import { Glossary } from './Glossary.tsx';
import { holdLinkText } from '../../state/text/index.ts';

/** A preset link: a plain link (open it in a new tab, copy it); a plain click loads it in place. */
function PresetAnchor({ link, busy }: { link: PresetLink; busy: boolean }) {
  const load = (e: MouseEvent<HTMLAnchorElement>, config: RunConfig) => {
    if (busy || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    // A preset on a text the page has not read yet (the example) reads it first, then applies the link.
    if (!holdLinkText(presetQuery(config))) setConfig(config);
    usePipeLab.getState().setView('run');
    document.getElementById('run-controls')?.scrollIntoView({ block: 'nearest' });
  };
  return (
    <a href={presetQuery(link.config)} className="preset-link" onClick={(e) => load(e, link.config)} aria-disabled={busy || undefined}>
      {link.label}
    </a>
  );
}

export function Intro() {
  const open = useOnboarding((s) => s.introOpen);
  const glossaryOpen = useOnboarding((s) => s.glossaryOpen);
  const dismiss = useOnboarding((s) => s.dismissIntro);
  const setGlossaryOpen = useOnboarding((s) => s.setGlossaryOpen);
  const busy = usePipeLab((s) => isActive(s.run.status));
  if (!open) return null;
  return (
    <section className="intro panel" aria-labelledby="intro-title" data-testid="intro">
      <div className="intro-head">
        <h2 id="intro-title">What you are looking at</h2>
        <button type="button" onClick={dismiss} aria-label="Hide the introduction">
          Got it, hide this
        </button>
      </div>
      <p>
        A small neural network is cut into <b>stages</b>, one per <b>rank</b> (a Web Worker with its own WebGPU device). A <b>schedule</b> decides
        when each rank runs the forward (F) and backward (B) of each <b>micro-batch</b>. Press <kbd>Run</kbd> (or the <kbd>R</kbd> key) and the
        timeline draws what every rank really did; the hatched gaps are the <b>bubble</b>, time a rank waits for its neighbours. The numbers under
        the timeline compare the measurement with the simulator and the textbook formula, and say where the difference comes from.
      </p>
      <h3 className="intro-sub">Try one idea at a time</h3>
      <ul className="presets" aria-label="Presets">
        {PRESETS.map((p) => (
          <li key={p.id} data-preset={p.id}>
            <b>{p.title}.</b> <span className="muted">{p.look}</span>{' '}
            <span className="preset-links">
              <PresetAnchor link={p.first} busy={busy} />
              {p.then && (
                <>
                  {' · '}
                  <PresetAnchor link={p.then} busy={busy} />
                </>
              )}
            </span>
          </li>
        ))}
      </ul>
      <details className="glossary-box" open={glossaryOpen} onToggle={(e) => setGlossaryOpen((e.currentTarget as HTMLDetailsElement).open)}>
        <summary>Glossary: rank, stage, micro-batch, bubble, makespan, F/B/I/W, virtual stage, recomputation</summary>
        <Glossary />
      </details>
    </section>
  );
}
