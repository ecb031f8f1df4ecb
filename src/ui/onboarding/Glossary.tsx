/** The words the page uses, each in one or two sentences. */

export const GLOSSARY: readonly { term: string; id: string; text: string }[] = [
  { id: 'rank', term: 'Rank', text: 'One worker with its own (WebGPU) device. Here every rank is a Web Worker; in a data centre it is one GPU.' },
  { id: 'stage', term: 'Stage', text: 'A consecutive slice of the model’s layers. The model is cut into stages and each rank runs one (or several, see virtual stage).' },
  { id: 'microbatch', term: 'Micro-batch', text: 'A slice of the batch. The pipeline streams micro-batches through the stages so that several ranks work at once; their gradients add up to the batch’s.' },
  { id: 'bubble', term: 'Bubble', text: 'The share of a step a rank sits idle (hatched on the timeline): 1 − busy time ÷ (ranks × makespan). Schedules exist to shrink it.' },
  { id: 'makespan', term: 'Makespan', text: 'The time one training step takes, from the first action’s start to the last one’s end: in ms when measured, in unit time (F = 1, B = 2 per rank) in theory.' },
  { id: 'ops', term: 'F / B / I / W', text: 'Forward; backward; and, when a schedule splits the backward, I (gradient for the previous stage’s input, needed at once) and W (gradient for the weights, can wait).' },
  { id: 'virtual', term: 'Virtual stage', text: 'One of several smaller model chunks a rank holds (interleaved 1F1B, interleaved zero bubble, ZB-V, looped BFS, Hanayo’s waves: 2 per wave). More chunks per rank fill the pipeline sooner but send more messages.' },
  { id: 'recompute', term: 'Recomputation', text: 'Keep only each stage’s input in the forward and run the forward again inside the backward: less memory held, more compute. Selective recomputation (the GPT) keeps everything but each block’s attention probabilities, the part that grows with the sequence squared, and recomputes only those.' },
  { id: 'closed-form', term: 'Simulated · closed form', text: 'Simulated: the schedule played by the simulator (with the measured op times after a run). Closed form: the textbook formula for identical stages and free links.' },
  { id: 'replica', term: 'Replica (dp)', text: 'A whole copy of the pipeline working on its own slice of the batch (data parallelism). After the backward, each stage’s gradients are summed over the replicas by a ring all-reduce, so every copy takes the same update.' },
  { id: 'tp', term: 'Tensor parallel (tp)', text: 'Several workers sharing one stage’s layers, each holding a slice of every weight matrix (Megatron-LM). They exchange activations inside every block (a GPT block: two all-reduces forward, two backward).' },
  { id: 'sequence-parallel', term: 'Sequence parallelism', text: 'Beside tensor parallelism, the activations tp leaves whole on every worker (LayerNorms, dropout, the residual stream) split along the sequence too, each of the tp workers holding its slice of the tokens; each all-reduce becomes a reduce-scatter and an all-gather of the same volume (Korthikanti et al. 2022). The tab runs it on the GPT with tp ≥ 2 (the Sequence parallelism box: reduce-scatters and all-gathers in the timeline, the same losses); Simulate at scale plays it on its abstract layers, and the planner weighs it (Simulate, “Plan a real model”).' },
  { id: 'zero', term: 'ZeRO 1 · 2 · 3', text: 'Sharding across replicas what each would otherwise hold whole: the optimizer state (1), the gradients too (2), the weights too (3, also called FSDP). Less memory per worker, more collectives.' },
  { id: 'copies', term: 'Model copies (DualPipe)', text: 'DualPipe holds two copies of the model, fed from both ends: rank r holds stage r of one and stage p − 1 − r of the other. After the backward each stage’s gradients are summed with its other copy’s (ranks r and p − 1 − r, drawn amber), so both copies take the same update.' },
  { id: 'wave', term: 'Wave (Hanayo)', text: 'Hanayo cuts the model into 2·W·p stages that zig-zag over the ranks, down and back up W times: rank r holds stages r and 2p − 1 − r of every wave, so the first and last stage share rank 0. One wave is the V of ZB-V.' },
  { id: 'moe', term: 'Mixture of experts (MoE)', text: 'An MLP replaced by E expert MLPs and a router that sends each token to its top-k of them (Switch: 1, GShard: 2), so the parameters grow with E while each token’s compute stays k experts’. Each expert takes at most a capacity of a group’s tokens (capacity factor · k · tokens / E; 0: dropless); a token over it keeps only its residual. An aux loss pulls the router towards balanced experts. The tab runs each stage’s experts on its own worker (ep = 1) or shares them over ep workers, the tokens sent to their experts by an all-to-all and back by another.' },
  { id: 'stream', term: 'Stream (PipeDream)', text: 'PipeDream and PipeDream-2BW never flush: a run’s steps × micro-batches flow as one stream, with the fill and drain paid once, at the cost of updates that read stale weights.' },
];

export function Glossary() {
  return (
    <dl className="glossary" aria-label="Glossary">
      {GLOSSARY.map((g) => (
        <div key={g.id} id={`glossary-${g.id}`}>
          <dt>{g.term}</dt>
          <dd>{g.text}</dd>
        </div>
      ))}
    </dl>
  );
}
