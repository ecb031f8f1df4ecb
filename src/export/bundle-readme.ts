/** The README.md of a PyTorch bundle: how to run it on one machine, on several, and with torch.distributed.pipelining. */
import { configToQuery, type RunConfig } from '../config/run-config.ts';
import { mesh, workerCount } from '../schedule/mesh.ts';
import { SCHEDULES, UPDATE_WINDOWS } from '../schedule/registry.ts';
import type { TextCorpus } from '../data/text-corpus.ts';
import { TORCH_PROGRAM_FILES } from './torch-program.ts';
import { torchrunLine } from './torchrun-command.ts';
import { count } from '../util/count.ts';
import { moeOf } from '../nn/moe/moe-config.ts';

/** The mesh line's ZeRO part: which stage, and ZeRO-3's reshard and prefetch. */
function zeroText(run: RunConfig): string {
  if (run.zero === 0) return ' (no ZeRO)';
  return ` with ZeRO-${run.zero}${run.zero === 3 ? ` (reshard ${run.reshard}, ${run.prefetch ? '' : 'no '}prefetch)` : ''}`;
}

/** The mesh paragraph's opening with tensor parallelism. */
function tpText(D: number, T: number, P: number, W: number, sp: boolean): string {
  return `The world size is dp × tp × ranks = ${D} × ${T} × ${P} = ${W}, numbered as the page's workers: process g is
replica g // ${T * P}, pipeline rank (g // ${T}) % ${P}, tp rank g % ${T}. The ${T} processes of one pipeline rank (its tp
group, a \`torch.distributed\` group) hold its stages split as Megatron-LM splits them (\`tensor_parallel.py\`): GPT blocks
by heads (\`c_attn\` column-parallel, q, k and v of the process's heads; \`c_proj\` row-parallel, its bias added once after
an \`all_reduce\`; the MLP likewise), the MLPs' hidden linears by output columns (\`all_gather\`ed after); embeddings,
LayerNorms and heads are whole on each. Activations go from tp rank j of one stage to tp rank j of the next, and the
replicas of each tp piece form the data-parallel groups. Checkpoints and \`trained.safetensors\` hold whole tensors.${
    sp
      ? `
Sequence parallelism is on: between the layers and stages each tp process holds its block of the ${T}-way split token
rows; an \`all_gather\` of rows comes before each column-parallel linear, an \`all_reduce\` then its own rows (gloo has no
\`reduce_scatter\`) after each row-parallel one, and the LayerNorms' and row-parallel biases' gradients are summed over the
group where the update reads them (once a step under a flush). \`--profile\` times each block as one tp process computes its rows, with these collectives, and each boundary
for one process's block of the rows, so \`pipelab plan --tp ${T}\` plans this run.`
      : ''
  }`;
}

/**
 * Where the run kept its bytes (activation swapping, optimizer offload): the page's choices change where values live,
 * not what they are, so train.py computes the same training without them; what a CUDA cluster would use for each.
 */
function placementText(run: RunConfig): string {
  if (run.swap === undefined && !run.offloadOptimizer) return '';
  const lines: string[] = [];
  if (run.swap !== undefined) {
    const which = run.swap === 'all' ? 'every stage' : `stage${run.swap.length > 1 ? 's' : ''} ${run.swap.join(', ')}`;
    lines.push(`- Activation swapping (${which}): on a CUDA cluster, run those stages' forward under
  \`torch.autograd.graph.save_on_cpu(pin_memory=True)\`, which keeps what autograd saves for the backward in pinned host
  memory and brings it back for the backward.`);
  }
  if (run.offloadOptimizer) {
    lines.push(`- Optimizer offload: on a CUDA cluster, DeepSpeed's ZeRO-Offload, \`"zero_optimization": {"stage": ${Math.max(1, run.zero)}, "offload_optimizer": {"device": "cpu", "pin_memory": true}}\`
  (its CPU Adam), keeps the optimizer state in host memory and runs the step there.`);
  }
  return `## Where the bytes live

The page ran this configuration with its bytes placed differently; that changes where values live, not what they are,
so \`train.py\` trains it as it is (the same losses) and the page's choices are kept in \`config.json\`'s \`run\`:

${lines.join('\n')}

`;
}

/** The mesh paragraph's addition for a schedule with model copies (DualPipe): the copies' stages and their gradient sum. */
function copiesText(run: RunConfig): string {
  const copies = SCHEDULES[run.schedule].copies;
  if (copies <= 1) return '';
  const P = run.ranks;
  return `

\`${run.schedule}\` runs ${copies} copies of the model (\`copies\` in config.json; \`copies.py\`): the model is cut into ${P} stages,
copy 0's stage k is stage k on rank k and copy 1's is stage ${P} + k on rank ${P - 1} − k (schedule.csv lists all
${copies * P}); each rank builds its stage of each copy from the same weights by name. Micro-batches 0 … ${run.microbatches / 2 - 1} enter copy 0
at rank 0 and ${run.microbatches / 2} … ${run.microbatches - 1} copy 1 at rank ${P - 1}. At the flush each stage's gradients are summed over its two
copies (an \`all_reduce\` over the two ranks holding them, a \`new_group\` per pair${run.dp > 1 || (run.tp ?? 1) > 1 ? ' in each replica and tp rank, after the replicas\' all_reduce' : ''}${run.zero >= 1 ? `; with ZeRO-${run.zero} each replica's owned chunk${run.zero >= 2 ? ', accumulated over the step,' : ''} is what is summed and updated` : ''}) before the same optimizer step on both,
so the copies stay equal (train.py prints their largest difference at the end) and the run is one device's.
Checkpoints and \`trained.safetensors\` hold copy 0's weights; \`--resume\` loads them into both copies.`;
}

/** The paragraph for a schedule without a flush (PipeDream, PipeDream-2BW): one stream, its updates, no checkpoints. */
function streamText(run: RunConfig): string {
  const kind = SCHEDULES[run.schedule];
  if (!UPDATE_WINDOWS[kind.update].stream) return '';
  const m = run.microbatches;
  const rule = kind.update === 'double-buffered'
    ? `micro-batch k runs forward and backward on weight version max(k // ${m} − 1, 0), and a stage applies the summed
gradients of each block of ${m} micro-batches to its latest weights after the block's last backward (one version stale,
two versions held)`
    : `a stage steps its optimizer after every backward, and each micro-batch's backward runs on the weight version its
forward ran on (stashed until then: up to ranks − r versions on rank r)`;
  return `

\`${run.schedule}\` has no flush: schedule.csv is the whole run as one stream of steps × ${m} = ${run.steps * m} micro-batches
(numbered across steps: micro-batch k is step k // ${m}'s micro-batch k % ${m}), walked once (\`stream.py\`): ${rule}, as the page
does. Each step's loss is printed when the stream ends; no checkpoint is written, and \`--steps\` and \`--save-every\` are
refused. ${run.schedule === 'pipedream-2bw' ? "\`--resume FILE\` continues the page's checkpoint from inside the stream (step B, its older weight version as previous.*): the walk runs the actions of micro-batches B × m and later, the page's numbers." : "\`--resume\` is refused: a version is stashed per micro-batch in flight, so the stream resumes nowhere but its start."}`;
}

/** Expert parallelism as the page runs it (config.json's ep = run.ep; moe.py), one paragraph. */
function epText(run: RunConfig, E: number): string {
  const ep = run.ep ?? 1;
  if (ep === 1) return "Every process holds all the experts of its stages (config.json's `ep` = 1, as this run has it). ";
  return `Expert parallelism (config.json's \`ep\` = ${ep}, as the page ran it): each pipeline rank of each replica is ${ep}
processes, each on its slice of every micro-batch's sequences (rows [e·b/${ep}, (e+1)·b/${ep}) of the replica's b) and
holding ${E / ep} of every block's ${E} experts. The routing group stays the whole micro-batch: each MoE block
all-gathers the group's router probabilities over the ${ep} processes (\`all_gather\`), so all of them route it as one
device does (the same choices, capacity and drops); the tokens' rows go to their experts' processes and the outputs
come back by \`all_to_all_single\` (torch 1.13's gloo has it, NCCL too; whole buffers travel, zeros where another
process's token sits, where the page sends only the filled rows). The dense gradients are summed over the ep
processes and the replicas, each expert's over the replicas holding it; the aux loss and the drops are counted once.
Each process prints its experts and its collectives at the end. With ep > 1 \`train.py\` runs tp = 1, ZeRO 0 and one
model copy (DualPipe is refused at the export), and no \`--resume\` or \`--profile\`. `;
}

/** The mixture-of-experts section (moe.py): what train.py computes as the page does, what it prints, what is not exported. */
function moeText(run: RunConfig): string {
  const moe = moeOf(run);
  if (!moe) return '';
  const E = moe.experts, k = moe.topK;
  const which = moe.moeEvery === 1 ? 'every GPT block' : 'every other GPT block (blocks 1, 3, …)';
  const gates = k === 1
    ? 'Switch top-1: each token goes to its most probable expert and its output is p · E(x), not renormalised'
    : 'GShard top-2: each token goes to its two most probable experts with gates g1/(g1+g2) and g2/(g1+g2) (taken before the capacity)';
  const capacity = moe.capacityFactor === 0
    ? 'Dropless (capacity factor 0): every expert can take all S tokens of a group.'
    : `Each expert takes at most ⌈${moe.capacityFactor} · ${k} · S / ${E}⌉ of a group's S tokens: the group's first choices in token order, then its second choices behind them; a choice past that is dropped, and a token that loses its choices passes through the block's residual only.`;
  return `## Mixture of experts

The MLP of ${which} is ${E} experts behind a router (\`moe.py\`): router.weight [${E}, C] (no bias), the experts stacked
as \`mlp.experts.c_fc.weight\` [${E}·4C, C] and \`mlp.experts.c_proj.weight\` [${E}·C, 4C] (GELU-tanh, no biases). ${gates};
ties go to the lower expert index. The routing group is one micro-batch's tokens of one replica (its rows × blockSize).
${capacity} The aux loss ${moe.auxLossWeight} · ${E} · Σ_e f_e · P_e (f_e the group's share of first choices on e, P_e
its mean router probability) is weighted by the group's share of the step's tokens and its gradient joins the router's;
the printed loss stays the cross-entropy, and each step's line ends with \`aux X dropped N\` (the step's weighted aux
loss and the token choices dropped, summed over every process). All of it computes what the page computes
(src/nn/moe/moe-reference.ts), with the pipeline, replicas, ZeRO, recomputation and DualPipe.
${epText(run, E)}Not exported: tensor parallelism and selective recomputation with experts (the page
refuses both), and the aux and dropped counts of a PipeDream stream (its aux loss still trains; its lines show the
loss only).

`;
}

export function bundleReadme(run: RunConfig, corpus?: TextCorpus): string {
  const P = run.ranks;
  const D = run.dp;
  const T = run.tp ?? 1;
  const EP = run.ep ?? 1;
  const W = workerCount(mesh(D, P, T, EP));
  const modules = TORCH_PROGRAM_FILES.filter((f) => f !== 'train.py').map((f) => `\`${f}\``).join(', ');
  return `# A PipeLab run, exported for PyTorch

Model \`${run.model}\` on \`${run.dataset}\`, ${count(P, 'rank')} × ${count(run.virtual, 'stage')} per rank, schedule \`${run.schedule}\`,
${count(D, 'data-parallel replica')}${D > 1 ? zeroText(run) : ''}${T > 1 ? `, tensor parallelism tp = ${T}` : ''}: ${count(W, 'process', 'processes')} in all,
${count(run.microbatches, 'micro-batch', 'micro-batches')} of ${count(run.batchSize / (D * run.microbatches), 'row')} per step and replica, ${count(run.steps, 'step')}, ${run.optimizer} (lr ${run.lr}, ${run.lrSchedule}).
The page's link for the same run: \`?${configToQuery(run)}\`

| file | holds |
| --- | --- |
| \`train.py\` | the program's entry: PyTorch ≥ 1.13 and the Python standard library only |
| ${modules} | its modules (the mesh and the bundle's checks, a replica's rows, the model, a rank's schedule row, the data-parallel flush, the tensor-parallel split and its collectives, the optimizer, \`--profile\`, safetensors) |
| \`config.json\` | the run configuration (\`run\`), the model as blocks of layers, the stage cut, stage → rank, the lr of every step |
| \`schedule.csv\` | each rank's actions (\`2F0\` = stage 2, forward, micro-batch 0; F, B, I, W), PyTorch's time-aligned CSV |
| \`init.safetensors\` | the initial weights, named as the page names them (\`block0.linear.W\` is [in, out]; the GPT's are makemore's, \`transformer.h.0.attn.c_attn.weight\` is [3C, C]) |
| \`batches.safetensors\` | \`inputs\` [steps, batch, cols] and \`labels\` [steps, batch] (the GPT's: [steps, batch, blockSize], −1 where a position is padding): the exact batch of every step |
| \`heldout.safetensors\` | the held-out split (\`inputs\`, \`labels\`) |
${corpus ? `| \`text.txt\` | the text the run trained on (\`${corpus.name}\`, content hash ${corpus.hash}), cut into blocks of ${(run.blockSize ?? 0) + 1} characters with a seeded 90/10 split |
| \`vocab.json\` | its ${corpus.symbols.length} symbols by index (the batches hold these indices)${corpus.unknownChars > 0 ? '; the last is the unknown symbol the rarest characters read as' : ''} |
` : ''}
## Run it on one machine

\`\`\`sh
${torchrunLine(W)}                   # CPU, gloo
${torchrunLine(W, '--backend', 'nccl')}    # one CUDA GPU per process
${torchrunLine(W, '--profile')}         # no training: profile.json for \`pipelab plan --profile\`
\`\`\`

\`--redirects 1 --tee 1\` are there for PyTorch 1.13 on Python 3.11 (Debian 12's \`python3-torch\`), whose torchrun
fails at once without them (\`AttributeError: 'NoneType' object has no attribute 'get'\`, a launcher bug newer torch
does not have); newer torch takes them too. Each process's output comes prefixed \`[default<rank>]:\`.

${T > 1 ? tpText(D, T, P, W, run.sequenceParallel === true) : EP > 1 ? `The world size is dp × ranks × ep = ${D} × ${P} × ${EP} = ${W}, laid out as the page's workers: process
((d · ${P} + r) · ${EP} + e) is replica d, pipeline rank r, expert-parallel rank e (see Mixture of experts).` : `The world size is dp × ranks = ${D} × ${P} = ${W}, laid out replica-major (as the page's workers): process g is
replica g // ${P}, pipeline rank g % ${P}.`} Every replica runs the whole schedule on its own rows of each step's batch
(replica d: rows [d·B/${D}, (d+1)·B/${D})), and the ${D * EP} processes of one pipeline rank${EP > 1 ? " (every replica's ep processes; the experts' own groups below)" : ""} form a \`torch.distributed\`
group: at the flush each stage's gradients are summed over it with \`all_reduce\`, then every process steps its
optimizer. With ZeRO (\`run.zero\` in config.json) each replica keeps the optimizer state of its chunk of each
stage's parameters only (replica d owns chunk (d + 1) mod dp, as the page's ring), updates that chunk and an
\`all_gather\` shares the weights. ZeRO-1 sums the gradients at the flush; ZeRO-2 reduce-scatters each stage's
gradients after every backward (B, or W) into the replicas' chunks and drops the rest; ZeRO-3 also keeps the weights
only as chunks: they are gathered before each F, B and I of a stage and zeroed after the stage's last one of the step
(\`run.reshard\` = step) or after every action (microbatch), the next gather prefetched with \`run.prefetch\`.
torch 1.13's gloo has no reduce_scatter: it is emulated exactly by an \`all_reduce\` of which each replica keeps its
chunk. Every ZeRO stage trains the same weights as plain AdamW or SGD (only the order of the sums differs).
The loss is scaled by the targets of the whole step's batch, so the summed gradients are one device's.${copiesText(run)}${streamText(run)}

\`train.py\` builds every model the page offers: the MLP and the character MLP (relu, gelu or tanh) and the GPT
(makemore's Transformer: token + position embedding, pre-LayerNorm blocks with causal multi-head attention and a
GELU-tanh MLP, \`ln_f\` and a bias-free \`lm_head\`; stages pass [micro-batch, blockSize, width] tensors; the loss is the
cross-entropy summed over the targets that are not padding (label −1), divided by those of the whole batch).

Every step prints \`step N loss X\` (from replica 0's process holding the last stage; the whole batch's loss,
every replica's share): the same losses as the page.
At the end rank 0 writes \`out/trained.safetensors\` (the page's weight names) and prints the held-out loss.
The world size must be ${W}: another one (or a schedule.csv whose rows disagree with config.json) is refused on
every process with a message naming both. A receive that waits
longer than \`--timeout\` seconds (default 120) ends the run with a message naming the rank and the action.
Flags: \`--backend gloo|nccl\`, \`--steps N\` (fewer than exported), \`--timeout S\`, \`--threads T\` (CPU threads per rank),
\`--out DIR\`, \`--resume FILE\`, \`--save-every N\`; \`python3 train.py --help\` lists them.

Checkpoints: at the end of the run, and every \`--save-every N\` steps, rank 0 writes
\`out/checkpoint-stepK.safetensors\`: PipeLab's run-state file (weights by the page's names, the optimizer's state,
the step, the losses so far), the file the page's "Load checkpoint" reads and its "Download checkpoint" writes.
\`--resume FILE\` continues such a file (the page's or an earlier run's) from its step with its weights and optimizer
state; a damaged file, or one of another model or configuration, is refused before training starts with a message
naming what differs (the mesh and the schedule may differ: they change how a step is computed, not what).

## On several machines

\`\`\`sh
# on node K of N (K = 0 .. N-1), where N × PER_NODE = ${W}; HOST0 is node 0's address:
torchrun --redirects 1 --tee 1 --nnodes=N --nproc_per_node=PER_NODE --node_rank=K --master_addr=HOST0 --master_port=29500 train.py --backend nccl
\`\`\`

${moeText(run)}${placementText(run)}## Profile the cluster, plan in the tab

\`train.py --profile\` trains nothing: it times each block's forward (F), input gradient (I) and weight gradient (W)
for one micro-batch on its process's device (CUDA events on GPUs, wall time on CPU), the bytes each block keeps
for its backward, the one-way time of each block boundary's activation, the effective lanes when every process
computes at once (processes sharing cores or a GPU), with dp ≥ 2 each stage's all-reduce, with tp ≥ 2 the tp
group's all-reduce and each block as one tp worker computes it with its collectives, and writes
\`profile.json\` in PipeLab's Profile format (with the model it was measured on). The page's Plan panel and
\`npx pipelab plan --profile profile.json --ranks P --microbatches M --mem-cap C [--dp D] [--tp T]\` read it; export the planned
cut (\`--partition cut --cut ...\`) and run it here.

## With torch.distributed.pipelining (PyTorch ≥ 2.5)

\`schedule.csv\` is the compute-only CSV that \`_dump_csv\` writes: one row per rank, one column per time step,
an empty cell where a rank idles. It loads into a multi-stage schedule object:

\`\`\`python
from torch.distributed.pipelining.schedules import ScheduleInterleaved1F1B  # any PipelineScheduleMulti
schedule = ScheduleInterleaved1F1B(my_stages, n_microbatches=${UPDATE_WINDOWS[SCHEDULES[run.schedule].update].microbatches(run.microbatches, run.steps)}, loss_fn=loss_fn)
schedule._load_csv("schedule.csv")  # format="compute_only"
\`\`\`

Its lock-step executor runs column t of every rank together; every input from another rank sits in an
earlier column than the action that uses it.
`;
}
