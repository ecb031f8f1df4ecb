/**
 * The GPT's attention for one sampled name: per layer, one small heat map per
 * head, row t = the position predicting the next character, column j = the
 * position it attends to (j ≤ t, causal), darker = more weight.
 */
import { useEffect, useState } from 'react';
import type { AttentionPatterns } from '../../nn/attention-patterns.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { trainedAttention, type WeightMap } from '../../state/run/index.ts';

const CELL = 12;

function HeadMap({ probs, tokens, label }: { probs: number[][]; tokens: string[]; label: string }) {
  const n = tokens.length;
  const pad = CELL;
  return (
    <figure className="attention-head" style={{ margin: 0 }}>
      <svg width={pad + n * CELL} height={pad + n * CELL} role="img" aria-label={label}>
        {tokens.map((c, j) => (
          <text key={`c${j}`} x={pad + j * CELL + CELL / 2} y={CELL - 2} fontSize={9} textAnchor="middle">{c}</text>
        ))}
        {tokens.map((c, t) => (
          <text key={`r${t}`} x={CELL / 2} y={pad + t * CELL + CELL - 2} fontSize={9} textAnchor="middle">{c}</text>
        ))}
        {probs.map((row, t) =>
          row.map((p, j) =>
            j <= t ? <rect key={`${t}:${j}`} x={pad + j * CELL} y={pad + t * CELL} width={CELL - 1} height={CELL - 1} fill={`rgba(40, 80, 200, ${p.toFixed(3)})`}><title>{`${tokens[t]} → ${tokens[j]}: ${p.toFixed(2)}`}</title></rect> : null,
          ),
        )}
      </svg>
      <figcaption>{label}</figcaption>
    </figure>
  );
}

export function AttentionPatternsView({ config, weights, name }: { config: RunConfig; weights: WeightMap; name: string }) {
  const [patterns, setPatterns] = useState<AttentionPatterns | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setPatterns(null);
    trainedAttention(config, weights, name).then(
      (p) => live && setPatterns(p),
      (e: unknown) => live && setError(e instanceof Error ? e.message : String(e)),
    );
    return () => {
      live = false;
    };
  }, [config, weights, name]);
  if (error) return <p className="muted">Attention pattern: {error}</p>;
  if (!patterns) return <p className="muted">Computing the attention pattern of “{name}”…</p>;
  return (
    <div className="attention-patterns" data-testid="attention-patterns">
      <h3>Where each head looks, for “{name}”</h3>
      {patterns.probs.map((layer, l) => (
        <div key={l} className="attention-layer" style={{ display: 'flex', flexWrap: 'wrap', gap: 8 }}>
          {layer.map((head, h) => (
            <HeadMap key={h} probs={head} tokens={patterns.tokens} label={`layer ${l}, head ${h}`} />
          ))}
        </div>
      ))}
    </div>
  );
}
