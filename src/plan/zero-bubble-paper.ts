/**
 * The zero-bubble paper's measured settings (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
 * arXiv:2401.10241), as published, for src/plan/papers.ts to set our schedules beside:
 *
 * - Table 3: the GPT-3-like models (layers, heads, hidden size; sequence length 1024) and their pipelines;
 * - Table 9 (Appendix D): the profiled T_F, T_B (the input-gradient backward), T_W (the weight gradient)
 *   and T_comm (one point-to-point message) per (model, p, m), in milliseconds, measured in ZB-2p runs on
 *   A100s; the paper computes every schedule's bubble rate from these;
 * - Table 5 (§5.3): those bubble rates, (cost − m(T_F + T_B + T_W)) / cost, with cost the longest
 *   execution time of any stage, for 1F1B, ZB-H1, ZB-1p and ZB-2p (the automatically built schedules under
 *   activation memory limits of p and 2p micro-batches, M_B each);
 * - Table 4 (§5.2): the measured throughput, samples per GPU per second, of ZB-2p, ZB-1p and 1F1B.
 *
 * The memory model of the authors' scheduler (their code, zero-bubble-pipeline-parallelism, and the
 * schedulers derived from it): per micro-batch a forward holds mem_f = 34h + 5as (Korthikanti et al.'s
 * activations per token), the input-gradient backward frees all but mem_w = 32h (what W still needs),
 * W frees the rest; M_B = mem_f.
 */

export interface ZeroBubbleModel {
  name: '1.5B' | '6.2B' | '14.6B' | '28.3B';
  layers: number;
  heads: number;
  hidden: number;
  seq: number;
}

/** Table 3. */
export const ZB_MODELS: readonly ZeroBubbleModel[] = [
  { name: '1.5B', layers: 22, heads: 24, hidden: 2304, seq: 1024 },
  { name: '6.2B', layers: 30, heads: 32, hidden: 4096, seq: 1024 },
  { name: '14.6B', layers: 46, heads: 40, hidden: 5120, seq: 1024 },
  { name: '28.3B', layers: 62, heads: 48, hidden: 6144, seq: 1024 },
];

export interface ZeroBubbleSetting {
  model: ZeroBubbleModel['name'];
  p: number;
  m: number;
  /** Table 9, ms. */
  TF: number;
  TB: number;
  TW: number;
  Tcomm: number;
  /** Table 5: bubble rates. */
  bubble: { '1F1B': number; 'ZB-H1': number; 'ZB-1P': number; 'ZB-2P': number };
  /** Table 4: samples per GPU per second, measured. */
  throughput: { '1F1B': number; 'ZB-1P': number; 'ZB-2P': number };
}

const row = (model: ZeroBubbleModel['name'], p: number, m: number, t: [number, number, number, number], b: [number, number, number, number], s: [number, number, number]): ZeroBubbleSetting => ({
  model,
  p,
  m,
  TF: t[0],
  TB: t[1],
  TW: t[2],
  Tcomm: t[3],
  bubble: { '1F1B': b[0], 'ZB-H1': b[1], 'ZB-1P': b[2], 'ZB-2P': b[3] },
  throughput: { '1F1B': s[0], 'ZB-1P': s[1], 'ZB-2P': s[2] },
});

/** Tables 9, 5 and 4 row by row: T_F, T_B, T_W, T_comm; bubble rates 1F1B, ZB-H1, ZB-1p, ZB-2p; throughput 1F1B, ZB-1p, ZB-2p. */
export const ZB_SETTINGS: readonly ZeroBubbleSetting[] = [
  row('1.5B', 8, 24, [18.522, 18.086, 9.337, 0.601], [0.2431, 0.1585, 0.1585, 0.0433], [11.8, 12.9, 14.5]),
  row('1.5B', 8, 32, [18.513, 18.086, 9.331, 0.626], [0.1985, 0.1242, 0.1242, 0.0039], [12.5, 13.4, 14.8]),
  row('1.5B', 8, 64, [18.546, 18.097, 9.321, 0.762], [0.124, 0.0674, 0.0674, 0.0026], [13.6, 14.2, 14.9]),
  row('6.2B', 8, 24, [29.718, 29.444, 19.927, 0.527], [0.2347, 0.1323, 0.1323, 0.0029], [3.5, 3.88, 4.32]),
  row('6.2B', 8, 32, [29.802, 29.428, 19.53, 0.577], [0.1898, 0.1045, 0.1045, 0.0022], [3.7, 4.0, 4.35]),
  row('6.2B', 8, 64, [29.935, 29.621, 19.388, 0.535], [0.1091, 0.0554, 0.0554, 0.001], [4.03, 4.2, 4.39]),
  row('14.6B', 16, 48, [11.347, 11.248, 8.132, 0.377], [0.2552, 0.1397, 0.1397, 0.0066], [1.4, 1.61, 1.81]),
  row('14.6B', 16, 64, [11.307, 11.254, 8.101, 0.379], [0.2082, 0.1088, 0.1088, 0.0054], [1.49, 1.67, 1.83]),
  row('14.6B', 16, 128, [11.325, 11.308, 8.109, 0.378], [0.1251, 0.0576, 0.0576, 0.0028], [1.64, 1.76, 1.85]),
  row('28.3B', 32, 96, [10.419, 10.207, 7.715, 0.408], [0.2646, 0.1421, 0.1421, 0.0038], [0.76, 0.87, 0.99]),
  row('28.3B', 32, 128, [10.408, 10.204, 7.703, 0.408], [0.2168, 0.1106, 0.1106, 0.0029], [0.8, 0.9, 1.0]),
  row('28.3B', 32, 256, [10.402, 10.248, 7.698, 0.46], [0.1352, 0.0594, 0.0594, 0.0018], [0.88, 0.96, 1.0]),
];

/** The share of a micro-batch's activations still held after its input-gradient backward: mem_w / mem_f = 32h / (34h + 5as). */
export function heldAfterInputShare(m: ZeroBubbleModel): number {
  return (32 * m.hidden) / (34 * m.hidden + 5 * m.heads * m.seq);
}
