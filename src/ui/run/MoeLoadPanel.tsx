/**
 * Expert load: for the step shown (the latest, or one picked with the slider), each MoE layer's tokens routed to
 * each expert by each micro-batch, as a heat map (experts × micro-batches, colour = tokens routed, first and second
 * choices together; a red mark and "−n" where the capacity dropped n of them), with a text summary per layer (the
 * tokens each expert got over the step, max / min, the drops). The counts are the workers' own, made where the route
 * is computed and read once a step with the aux loss (runtime/report/report-moe-load.ts); the table is the map,
 * so a screen reader reads the same numbers.
 */
import { useState } from 'react';
import { summarizeLayerLoad, type MoeLayerLoad, type MoeLoadStep } from '../../runtime/report/index.ts';

/** A layer's name as the page says it: 'block1.transformer' → 'block 1'. */
export function moeLayerLabel(layer: string): string {
  const m = /^block(\d+)\./.exec(layer);
  return m ? `block ${m[1]}` : layer;
}

/** The summary sentence of one layer's step. */
export function moeLoadSentence(l: MoeLayerLoad): string {
  const s = summarizeLayerLoad(l);
  const ratio = Number.isFinite(s.maxMinRatio) ? `max / min ${s.maxMinRatio.toFixed(2)}` : `max / min ∞ (expert ${s.idlest} got none)`;
  const drops = s.totalDropped > 0 ? `${s.totalDropped} of ${s.totalRouted} choices dropped for capacity (${s.dropped.map((d, e) => (d > 0 ? `expert ${e}: ${d}` : '')).filter(Boolean).join(', ')})` : `none of ${s.totalRouted} choices dropped`;
  return `${moeLayerLabel(l.layer)}: tokens per expert ${s.routed.join(' · ')} (${ratio}; busiest expert ${s.busiest}, idlest ${s.idlest}); ${drops}.`;
}

/** Cell colour for t in [0, 1]: dark to the accent blue. */
function shade(t: number): string {
  return `hsl(215 ${40 + 45 * t}% ${14 + 46 * t}%)`;
}

function LayerMap({ l }: { l: MoeLayerLoad }) {
  const routed = l.first.map((col, c) => col.map((f, e) => f + l.second[c][e]));
  const max = Math.max(1, ...routed.flat());
  const replicas = new Set(l.columns.map((c) => c.replica)).size;
  const colName = (c: MoeLayerLoad['columns'][number]) => (replicas > 1 ? `r${c.replica}·${c.mb}` : String(c.mb));
  const caps = [...new Set(l.columns.map((c) => c.capacity))];
  return (
    <figure className="moe-map" data-testid="moe-load-layer" data-layer={l.layer}>
      <div className="moe-map-scroll">
        <table>
          <caption>
            {moeLayerLabel(l.layer)} <span className="muted">(stage {l.stage}; capacity {caps.join(' / ')} rows per expert)</span>
          </caption>
          <thead>
            <tr>
              <th scope="col" title="Rows: experts; columns: micro-batches (with replicas: replica·micro-batch)">e \ mb</th>
              {l.columns.map((c, i) => (
                <th key={i} scope="col" title={`micro-batch ${c.mb}${replicas > 1 ? ` of replica ${c.replica}` : ''}, routed on worker ${c.worker}`}>
                  {colName(c)}
                </th>
              ))}
              <th scope="col" title="Tokens routed to the expert over the step">Σ</th>
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: l.experts }, (_, e) => (
              <tr key={e}>
                <th scope="row">{e}</th>
                {l.columns.map((c, i) => {
                  const n = routed[i][e], d = l.dropped[i][e], t = n / max;
                  return (
                    <td
                      key={i}
                      className={d > 0 ? 'moe-cell dropped' : 'moe-cell'}
                      style={{ background: shade(t), color: t > 0.55 ? '#0d1016' : 'var(--text)' }}
                      data-expert={e}
                      data-column={i}
                      data-routed={n}
                      data-dropped={d}
                      title={`expert ${e}, ${colName(c)}: ${n} tokens (${l.first[i][e]} first choice, ${l.second[i][e]} second), capacity ${c.capacity}${d > 0 ? `, ${d} dropped` : ''}`}
                    >
                      {n}
                      {d > 0 && <span className="moe-drop">−{d}</span>}
                    </td>
                  );
                })}
                <td className="moe-total">{routed.reduce((a, col) => a + col[e], 0)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <figcaption className="small" data-testid="moe-load-summary">
        {moeLoadSentence(l)}
      </figcaption>
    </figure>
  );
}

export function MoeLoadPanel({ steps, running }: { steps: readonly MoeLoadStep[]; running: boolean }) {
  // null: follow the latest step.
  const [picked, setPicked] = useState<number | null>(null);
  const last = steps.length - 1;
  const i = picked === null ? last : Math.min(picked, last);
  const st = steps[i];
  return (
    <section className="panel moe-load" aria-labelledby="moe-load-title" data-testid="moe-load">
      <div className="panel-head">
        <h2 id="moe-load-title">Expert load</h2>
        {steps.length > 1 && (
          <label className="moe-step">
            <span>step {st.step}</span>
            <input
              type="range"
              min={0}
              max={last}
              value={i}
              aria-label="Step shown in the expert load"
              aria-valuetext={`step ${st.step}`}
              onChange={(e) => {
                const v = Number(e.target.value);
                setPicked(v === last ? null : v);
              }}
            />
            <button type="button" className="moe-latest" disabled={picked === null} onClick={() => setPicked(null)}>
              latest
            </button>
          </label>
        )}
      </div>
      {st ? (
        <>
          <p className="muted small">
            Step {st.step}: tokens each micro-batch routed to each expert (first and second choices), darker to brighter up to the layer’s busiest cell;
            <span className="moe-drop-key"> −n</span> and a red edge: n of them dropped past the expert’s capacity (their block passes them on through
            the residual only). One worker routes each micro-batch and computes all of its experts’ capacity rows, filled or not (ep = 1), so uneven
            load costs no time here, only drops. With expert parallelism (not built yet) each expert row would belong to the worker holding it, and the
            wait an overloaded expert’s worker causes would show on the timeline’s lanes.
          </p>
          <div className="moe-maps">
            {st.layers.map((l) => (
              <LayerMap key={l.layer} l={l} />
            ))}
          </div>
        </>
      ) : (
        <p className="muted small">{running ? 'The map fills after the first step.' : 'Run to see how many tokens each expert gets from each micro-batch, and how many the capacity drops.'}</p>
      )}
    </section>
  );
}
