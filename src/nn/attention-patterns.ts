/**
 * What each attention head of a GPT looks at for one name: per layer and head,
 * the causal attention probabilities over the name's positions (row t: how much
 * position t attends to each j ≤ t), from a forward pass of the model's layers.
 */
import { END, encodeName } from '../data/names.ts';
import { ConfigError } from '../util/errors.ts';
import type { Backend } from './backend.ts';
import { GptBlock } from './layers/gpt-block.ts';
import { GptMoeBlock } from './layers/gpt-moe-block.ts';
import { rowsPerExample } from './model-spec.ts';
import type { StageChain } from './stage-chain.ts';

export interface AttentionPatterns {
  /** The tokens shown: '.' (the start mark) then the name's characters. */
  tokens: string[];
  /** [layer][head][t][j] for t, j < tokens.length; 0 for j > t. */
  probs: number[][][][];
}

export async function attentionPatterns(be: Backend, model: StageChain, name: string): Promise<AttentionPatterns> {
  const T = rowsPerExample(model.spec);
  if (T <= 1) throw new ConfigError('model', model.spec.name, 'must be a GPT to show attention patterns');
  const chars = encodeName(name);
  if (chars.length + 1 > T) throw new ConfigError('name', name, `must have at most ${T - 1} characters (the block holds ${T} positions)`);
  const x = new Int32Array(T).fill(END);
  x.set(chars, 1);
  const n = chars.length + 1;
  const probs: number[][][][] = [];
  let cur = be.tensor(x, [1, T], 'i32');
  for (const stage of model.stages) {
    for (const layer of stage.layers) {
      if (layer instanceof GptBlock || layer instanceof GptMoeBlock) {
        const probsT = layer.attentionProbs(cur);
        const P = await be.read(probsT);
        be.dispose(probsT);
        const H = P.length / (T * T);
        probs.push(Array.from({ length: H }, (_, h) => Array.from({ length: n }, (_, t) => Array.from(P.subarray((h * T + t) * T, (h * T + t) * T + n)))));
      }
      const f = await layer.forward(cur, false);
      be.dispose(cur);
      cur = f.y;
    }
  }
  be.dispose(cur);
  return { tokens: ['.', ...name], probs };
}
