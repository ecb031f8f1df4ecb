/**
 * Expert load: for the step shown (the latest, or one picked with the slider), each MoE layer's tokens routed to
 * each expert by each micro-batch, as a heat map (experts × micro-batches, colour = tokens routed, first and second
 * choices together; a red mark and "−n" where the capacity dropped n of them), with a text summary per layer (the
 * tokens each expert got over the step, max / min, the drops). The counts are the workers' own, made where the route
 * is computed and read once a step with the aux loss (runtime/report/report-moe-load.ts); the table is the map,
 * so a screen reader reads the same numbers. With expert parallelism (ep > 1) each expert's row names the ep worker
 * holding it, rows per worker give the tokens its experts received from each micro-batch (the busiest marked), and
 * its all-to-alls' wait for the group's slowest member over the step (runtime/report/report-ep-wait.ts).
 */
import { useState } from 'react';
import { epOwner, epReceived, summarizeLayerLoad, type EpWorkerWait, type MoeLayerLoad, type MoeLoadStep } from '../../runtime/report/index.ts';

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

/** An ep worker's lane as the timeline labels it: `R1·e0`, `d1·R1·e0` with replicas. */
export function epLaneLabel(w: Pick<EpWorkerWait, 'replica' | 'rank' | 'epRank'>, replicas: number): string {
  return `${replicas > 1 ? `d${w.replica}·` : ''}R${w.rank}·e${w.epRank}`;
}

/** The ep sentence of one layer's step: the tokens each worker's experts received, the busiest, and each lane's wait. */
export function epLoadSentence(l: MoeLayerLoad, ep: number, waits: readonly EpWorkerWait[]): string {
  const got = epReceived(l, ep).reduce((acc, col) => acc.map((a, o) => a + col[o]), new Array<number>(ep).fill(0));
  const max = Math.max(...got);
  const replicas = new Set(waits.map((w) => w.replica)).size;
  const wait = waits.map((w) => `${epLaneLabel(w, replicas)} ${w.waitMs.toFixed(1)} of ${w.allToAllMs.toFixed(1)} ms`).join(', ');
  return `ep workers: tokens received ${got.map((n, o) => `e${o} ${n}`).join(' · ')} (busiest e${got.indexOf(max)})${wait ? `; ep wait (of the all-to-alls' time) ${wait}` : ''}.`;
}

/** Cell colour for t in [0, 1]: dark to the accent blue. */
function shade(t: number): string {
  return `hsl(215 ${40 + 45 * t}% ${14 + 46 * t}%)`;
}

function LayerMap({ l, ep, waits }: { l: MoeLayerLoad; ep: number; waits: readonly EpWorkerWait[] }) {
  const routed = l.first.map((col, c) => col.map((f, e) => f + l.second[c][e]));
  const per = ep > 1 ? l.experts / ep : l.experts;
  const received = ep > 1 ? epReceived(l, ep) : [];
  const gotMax = Math.max(1, ...received.flat());
  const totals = Array.from({ length: ep > 1 ? ep : 0 }, (_, o) => received.reduce((a, col) => a + col[o], 0));
  // The busiest worker, outlined where the load is uneven.
  const busiest = totals.length > 0 && Math.max(...totals) > Math.min(...totals) ? totals.indexOf(Math.max(...totals)) : -1;
  const replicasWaiting = new Set(waits.map((w) => w.replica)).size;
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
              {ep > 1 && (
                <th scope="col" title="The ep worker of the stage holding the expert">worker</th>
              )}
              <th scope="col" title="Rows: experts; columns: micro-batches (with replicas: replica·micro-batch)">e \ mb</th>
              {l.columns.map((c, i) => (
                <th key={i} scope="col" title={`micro-batch ${c.mb}${replicas > 1 ? ` of replica ${c.replica}` : ''}, routed on worker ${c.worker}`}>
                  {colName(c)}
                </th>
              ))}
              <th scope="col" title="Tokens routed to the expert over the step">Σ</th>
              {ep > 1 && (
                <th scope="col" title="The worker's all-to-alls this step: ms waiting for the ep group's slowest member (of their whole time)">ep wait</th>
              )}
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: l.experts }, (_, e) => (
              <tr key={e} data-owner={ep > 1 ? epOwner(e, l.experts, ep) : undefined}>
                {ep > 1 && e % per === 0 && (
                  <th scope="rowgroup" rowSpan={per} className="moe-owner" title={`experts ${e}–${e + per - 1} are held by ep worker ${epOwner(e, l.experts, ep)} of stage ${l.stage}`}>
                    e{epOwner(e, l.experts, ep)}
                  </th>
                )}
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
                {ep > 1 && <td />}
              </tr>
            ))}
          </tbody>
          {ep > 1 && (
            <tbody className="moe-workers">
              {totals.map((total, o) => {
                const mine = waits.filter((w) => w.epRank === o);
                return (
                  <tr key={o} className={o === busiest ? 'moe-worker busiest' : 'moe-worker'} data-testid="moe-ep-worker" data-worker={o} data-received={total} data-wait-ms={mine.reduce((a, w) => a + w.waitMs, 0).toFixed(3)}>
                    <th scope="row" colSpan={2} title={`Tokens ep worker ${o}'s experts (${o * per}–${(o + 1) * per - 1}) received from each micro-batch: their first and second choices kept (not dropped)`}>
                      e{o} got
                    </th>
                    {received.map((col, i) => {
                      const t = col[o] / gotMax;
                      return (
                        <td key={i} className="moe-cell" style={{ background: shade(t), color: t > 0.55 ? '#0d1016' : 'var(--text)' }} data-column={i} data-received={col[o]}>
                          {col[o]}
                        </td>
                      );
                    })}
                    <td className="moe-total">{total}</td>
                    <td className="moe-wait" title={mine.map((w) => `${epLaneLabel(w, replicasWaiting)}: ${w.waitMs.toFixed(2)} ms waiting of ${w.allToAllMs.toFixed(2)} ms in ${w.exchanges} all-to-alls`).join('; ')}>
                      {mine.length > 0 ? mine.map((w) => `${w.waitMs.toFixed(1)} ms`).join(' / ') : '–'}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          )}
        </table>
      </div>
      <figcaption className="small" data-testid="moe-load-summary">
        {moeLoadSentence(l)}
        {ep > 1 && <span data-testid="moe-ep-summary"> {epLoadSentence(l, ep, waits)}</span>}
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
            the residual only).{' '}
            {(st.ep ?? 1) > 1 ? (
              <>
                Expert parallelism: “worker” names the ep worker holding each expert (its lane R·e on the timeline); the “e<i>o</i> got” rows are the
                tokens its experts received from each micro-batch (kept choices), the busiest outlined. “ep wait” is, over the step, the part of each of
                the worker’s all-to-alls (the router probabilities’ gather and the token rows’ exchanges, forward and backward) before the last member of
                its ep group entered the same exchange: time waiting for the slowest member, on the workers’ one clock, striped at the start of each
                all-to-all on the timeline. Each worker computes its experts’ capacity rows whether tokens fill them or not, so here an overloaded
                expert’s worker costs the others time only through what it receives and copies; the wait shows whatever made a member late.
              </>
            ) : (
              <>One worker routes each micro-batch and computes all of its experts’ capacity rows, filled or not (ep = 1), so uneven load costs no time here, only drops.</>
            )}
          </p>
          <div className="moe-maps">
            {st.layers.map((l) => (
              <LayerMap key={l.layer} l={l} ep={st.ep ?? 1} waits={(st.epWait ?? []).filter((w) => w.stage === l.stage)} />
            ))}
          </div>
        </>
      ) : (
        <p className="muted small">{running ? 'The map fills after the first step.' : 'Run to see how many tokens each expert gets from each micro-batch, and how many the capacity drops.'}</p>
      )}
    </section>
  );
}
