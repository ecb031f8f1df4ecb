/**
 * What the colours and marks of the timeline mean: every op drawn, idle time
 * (the bubble, hatched grey), and each kind of communication mark on the thin
 * lane under a rank, with its own label (send, in flight, waiting to receive,
 * GPU → CPU, CPU → GPU).
 */
import type { CollectiveKind, CommKind, Op } from '../../schedule/index.ts';
import { COLLECTIVE_COLORS, COMM_COLORS, COMM_NAMES, OP_COLORS, OP_NAMES } from './colors.ts';

export interface TimelineLegendProps {
  ops: readonly Op[];
  /** The communication kinds drawn (none: no communication lane). */
  commKinds?: readonly CommKind[];
  /** The parts of a data-parallel collective drawn (none: a single pipeline). */
  collectiveKinds?: readonly CollectiveKind[];
  overlay?: boolean;
  chunks?: boolean;
  /** The ep all-to-alls carry their wait for the group's slowest member (striped). */
  epWait?: boolean;
}

/** Legend order; GPU → CPU and CPU → GPU share a colour, so they share an entry. */
const COMM_ENTRIES: readonly { kinds: readonly CommKind[]; label: string }[] = [
  { kinds: ['send'], label: `${COMM_NAMES.send} (posting a message)` },
  { kinds: ['transfer'], label: `${COMM_NAMES.transfer} (between ranks)` },
  { kinds: ['recv-wait'], label: `${COMM_NAMES['recv-wait']} (blocked on a neighbour)` },
  { kinds: ['readback', 'upload'], label: `${COMM_NAMES.readback} / ${COMM_NAMES.upload} copies` },
  { kinds: ['state-read'], label: `${COMM_NAMES['state-read']} (a save inside a PipeDream-2BW stream, on the worker's path)` },
  { kinds: ['swap-out'], label: `${COMM_NAMES['swap-out']} (after its forward, vDNN)` },
  { kinds: ['swap-in'], label: `${COMM_NAMES['swap-in']} (issued before the action ahead of its backward: the prefetch)` },
];

/** The all-reduce's parts; reading off and writing back the device share a colour, so they share an entry. */
const COLLECTIVE_ENTRIES: readonly { kinds: readonly CollectiveKind[]; label: string }[] = [
  { kinds: ['reduce-scatter'], label: 'reduce-scatter (a chunk to the ring successor, summed)' },
  { kinds: ['all-gather'], label: 'all-gather (a chunk passed on: summed gradients, or ZeRO-3’s weights)' },
  { kinds: ['gather-grads', 'scatter-back'], label: 'gradients GPU → CPU, result CPU → GPU' },
  { kinds: ['shard-update'], label: 'ZeRO: optimizer step on this worker’s shard' },
  { kinds: ['cpu-update'], label: 'optimizer offload: the step on the worker’s CPU, its state in host memory (ZeRO-Offload)' },
  { kinds: ['tp-all-reduce'], label: 'tp all-reduce: a stage’s tp workers sum activations between layers (Megatron’s f / g)' },
  { kinds: ['tp-all-gather'], label: 'tp all-gather: a column-parallel layer’s output columns joined (sequence parallelism: the token rows, before one)' },
  { kinds: ['tp-reduce-scatter'], label: 'tp reduce-scatter (sequence parallelism): a row-parallel layer’s partial sums, each tp worker keeping its token rows' },
  { kinds: ['copy-sum'], label: 'DualPipe: a stage’s gradients summed with its other model copy’s before the update' },
  { kinds: ['ep-all-to-all'], label: 'ep all-to-all: an MoE layer sends each token’s rows to its experts’ workers (dispatch) and brings them back (combine)' },
];

export function TimelineLegend({ ops, commKinds = [], collectiveKinds = [], overlay = false, chunks = false, epWait = false }: TimelineLegendProps) {
  const comm = COMM_ENTRIES.filter((e) => e.kinds.some((k) => commKinds.includes(k)));
  const coll = COLLECTIVE_ENTRIES.filter((e) => e.kinds.some((k) => collectiveKinds.includes(k)));
  return (
    <ul className="legend" aria-label="Timeline legend">
      {ops.map((op) => (
        <li key={op}>
          <span className="swatch" style={{ background: OP_COLORS[op] }} aria-hidden="true" />
          <b>{op}</b> {OP_NAMES[op]}
        </li>
      ))}
      <li>
        <span className="swatch hatch" aria-hidden="true" />
        idle (the bubble)
      </li>
      {chunks && <li className="muted">lighter shade: a rank’s second (fourth, …) model chunk (DualPipe: its stage of the second model copy)</li>}
      {comm.length > 0 && <li className="muted legend-sub">thin lane under each rank:</li>}
      {comm.map((e) => (
        <li key={e.kinds[0]} data-comm={e.kinds.join(' ')}>
          <span className="swatch thin" style={{ background: COMM_COLORS[e.kinds[0]] }} aria-hidden="true" />
          {e.label}
        </li>
      ))}
      {coll.map((e) => (
        <li key={e.kinds[0]} data-collective={e.kinds.join(' ')}>
          <span className="swatch thin" style={{ background: COLLECTIVE_COLORS[e.kinds[0]] }} aria-hidden="true" />
          {e.label}
        </li>
      ))}
      {epWait && (
        <li data-ep-wait="">
          <span className="swatch thin ep-wait" aria-hidden="true" />
          striped start of an ep all-to-all: waiting for the slowest member of its ep group (until the last member entered the exchange)
        </li>
      )}
      {overlay && (
        <li>
          <span className="swatch outline" aria-hidden="true" />
          simulated (dashed outline)
        </li>
      )}
    </ul>
  );
}
