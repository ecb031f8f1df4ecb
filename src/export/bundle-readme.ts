/** The README.md of a PyTorch bundle: how to run it on one machine, on several, and with torch.distributed.pipelining. */
import { configToQuery, type RunConfig } from '../runtime/run-config.ts';
import { TORCH_REFUSED_SCHEDULES } from './refusals.ts';

export function bundleReadme(run: RunConfig): string {
  const P = run.ranks;
  const refused = Object.entries(TORCH_REFUSED_SCHEDULES)
    .map(([name, rule]) => `- \`${name}\`: ${rule}`)
    .join('\n');
  return `# A PipeLab run, exported for PyTorch

Model \`${run.model}\` on \`${run.dataset}\`, ${P} ranks × ${run.virtual} stage(s) per rank, schedule \`${run.schedule}\`,
${run.microbatches} micro-batches of ${run.batchSize / run.microbatches} rows per step, ${run.steps} steps, ${run.optimizer} (lr ${run.lr}, ${run.lrSchedule}).
The page's link for the same run: \`?${configToQuery(run)}\`

| file | holds |
| --- | --- |
| \`train.py\` | the program: PyTorch ≥ 1.13 and the Python standard library only |
| \`config.json\` | the run configuration (\`run\`), the model as blocks of layers, the stage cut, stage → rank, the lr of every step |
| \`schedule.csv\` | each rank's actions (\`2F0\` = stage 2, forward, micro-batch 0; F, B, I, W), PyTorch's time-aligned CSV |
| \`init.safetensors\` | the initial weights, named as the page names them (\`block0.linear.W\` is [in, out]; the GPT's are makemore's, \`transformer.h.0.attn.c_attn.weight\` is [3C, C]) |
| \`batches.safetensors\` | \`inputs\` [steps, batch, cols] and \`labels\` [steps, batch] (the GPT's: [steps, batch, blockSize], −1 where a position is padding): the exact batch of every step |
| \`heldout.safetensors\` | the held-out split (\`inputs\`, \`labels\`) |

## Run it on one machine

\`\`\`sh
torchrun --nproc_per_node=${P} train.py                   # CPU, gloo
torchrun --nproc_per_node=${P} train.py --backend nccl    # one CUDA GPU per rank
\`\`\`

\`train.py\` builds every model the page offers: the MLP and the character MLP (relu, gelu or tanh) and the GPT
(makemore's Transformer: token + position embedding, pre-LayerNorm blocks with causal multi-head attention and a
GELU-tanh MLP, \`ln_f\` and a bias-free \`lm_head\`; stages pass [micro-batch, blockSize, width] tensors; the loss is the
cross-entropy summed over the targets that are not padding (label −1), divided by those of the whole batch).

Every step prints \`step N loss X\` (from the rank holding the last stage): the same losses as the page.
At the end rank 0 writes \`out/trained.safetensors\` (the page's weight names) and prints the held-out loss.
The world size must be ${P}: another one is refused with a message naming both. A receive that waits
longer than \`--timeout\` seconds (default 120) ends the run with a message naming the rank and the action.
Flags: \`--backend gloo|nccl\`, \`--steps N\` (fewer than exported), \`--timeout S\`, \`--threads T\` (CPU threads per rank),
\`--out DIR\`, \`--resume FILE\`, \`--save-every N\`; \`python3 train.py --help\` lists them.

Checkpoints: at the end of the run, and every \`--save-every N\` steps, rank 0 writes
\`out/checkpoint-stepK.safetensors\`: PipeLab's run-state file (weights by the page's names, the optimizer's state,
the step, the losses so far), the file the page's "Load checkpoint" reads and its "Download checkpoint" writes.
\`--resume FILE\` continues such a file (the page's or an earlier run's) from its step with its weights and optimizer
state; a damaged file, or one of another model or configuration, is refused before training starts with a message
naming what differs (the mesh and the schedule may differ: they change how a step is computed, not what).
With PyTorch 1.13 on Python 3.11, torchrun needs \`--redirects 1 --tee 1\` (a launcher bug newer torch does not have).

## On several machines

\`\`\`sh
# on node K of N (K = 0 .. N-1), where N × PER_NODE = ${P}; HOST0 is node 0's address:
torchrun --nnodes=N --nproc_per_node=PER_NODE --node_rank=K --master_addr=HOST0 --master_port=29500 train.py --backend nccl
\`\`\`

## With torch.distributed.pipelining (PyTorch ≥ 2.5)

\`schedule.csv\` is the compute-only CSV that \`_dump_csv\` writes: one row per rank, one column per time step,
an empty cell where a rank idles. It loads into a multi-stage schedule object:

\`\`\`python
from torch.distributed.pipelining.schedules import ScheduleInterleaved1F1B  # any PipelineScheduleMulti
schedule = ScheduleInterleaved1F1B(my_stages, n_microbatches=${run.microbatches}, loss_fn=loss_fn)
schedule._load_csv("schedule.csv")  # format="compute_only"
\`\`\`

Its lock-step executor runs column t of every rank together; every input from another rank sits in an
earlier column than the action that uses it.

## Schedules the exporter refuses

${refused}
`;
}
