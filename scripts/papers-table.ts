/**
 * Prints the tables of bench/PAPERS.md: our numbers beside the zero-bubble paper's and the trend of
 * Megatron SC'21 §5.4.2 (src/plan/papers.ts). Run: node --import tsx scripts/papers-table.ts
 */
import { DEEPSEEK_V3_PUBLISHED, deepseekV3Row } from '../src/plan/deepseek-v3.ts';
import { MEGATRON_542_DEVICE, MEGATRON_542_MODEL, megatronRows, zeroBubbleMeasuredRows, zeroBubbleRows } from '../src/plan/papers.ts';

const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
const lines: string[] = [];
lines.push('### Zero bubble: bubble rate (bubble / compute) and throughput over 1F1B at T_F = T_B = T_W', '');
lines.push('| p | m | schedule | paper: bubble rate | ours | difference | paper: speed-up over 1F1B | ours | difference |');
lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of zeroBubbleRows([[8, 24], [8, 32], [8, 64], [16, 48], [16, 64], [16, 128], [32, 96], [32, 128], [32, 256]])) {
  lines.push(
    `| ${r.p} | ${r.m} | ${r.schedule} | ${pct(r.paper)} | ${pct(r.ours)} | ${(100 * (r.ours - r.paper)).toFixed(2)} pp | ${r.paperSpeedup.toFixed(3)} | ${r.oursSpeedup.toFixed(3)} | ${(100 * (r.oursSpeedup / r.paperSpeedup - 1)).toFixed(2)}% |`,
  );
}
lines.push('', '### Zero bubble: the paper\'s measured settings (its Table 9 times → its Table 5 bubble rates, its Table 4 throughput)', '');
lines.push('| model | p | m | T_F / T_B / T_W / T_comm (ms) | schedule | paper: bubble rate | ours | difference | paper: measured speed-up over 1F1B | ours | difference |');
lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of zeroBubbleMeasuredRows()) {
  const st = r.setting;
  lines.push(
    `| ${st.model} | ${st.p} | ${st.m} | ${st.TF} / ${st.TB} / ${st.TW} / ${st.Tcomm} | ${r.schedule} | ${r.paper.toFixed(4)} | ${r.ours.toFixed(4)} | ${(r.ours - r.paper).toFixed(4)} | ` +
      `${r.paperSpeedup === null ? '(not measured)' : r.paperSpeedup.toFixed(3)} | ${r.oursSpeedup.toFixed(3)} | ${r.paperSpeedup === null ? '–' : `${(100 * (r.oursSpeedup / r.paperSpeedup - 1)).toFixed(1)}%`} |`,
  );
}
lines.push('', `### Megatron §5.4.2: ${MEGATRON_542_MODEL.layers} layers, hidden ${MEGATRON_542_MODEL.hidden}, ${MEGATRON_542_MODEL.heads} heads, seq ${MEGATRON_542_MODEL.seq}, 64 × ${MEGATRON_542_DEVICE.name} (p × d = 64, no tensor parallelism), 1F1B, micro-batch 1`, '');
lines.push('| batch | p × d | paper: trend | ours: sequences/s per GPU | ours vs p one step smaller | trend agrees | ours: compute bubble | §3.3 (p−1)/(m+p−1), balanced stages | ours: all-reduce share |');
lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const rows = megatronRows();
rows.forEach((r, i) => {
  const prev = i > 0 && rows[i - 1].batch === r.batch ? rows[i - 1] : null;
  const ratio = prev ? r.perGpu / prev.perGpu : null;
  lines.push(
    `| ${r.batch} | ${r.p} × ${r.d} | ${prev ? 'falls as p grows' : '(first)'} | ${r.perGpu.toFixed(3)} | ${ratio === null ? '–' : `${(100 * (ratio - 1)).toFixed(1)}%`} | ${ratio === null ? '–' : ratio < 1 ? 'yes' : 'no'} | ${pct(r.bubble)} | ${pct(r.megatronBubble)} | ${pct(r.allReduceShare)} |`,
  );
});
lines.push('', '### DeepSeek-V3 on 2048 H800s: dp 128 (ep 64) × tp 1 × pp 16, DualPipe, ZeRO-1, 15360 sequences of 4096 tokens, micro-batch 1', '');
lines.push('| recompute | step (s) | published | difference | bubble (s) | published | MFU, attention core whole | MFU, causal half | published MFU | GB / device | fits 80 GB |');
lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const P = DEEPSEEK_V3_PUBLISHED;
for (const rc of ['selective', 'full'] as const) {
  const r = deepseekV3Row(rc);
  lines.push(
    `| ${rc} | ${r.stepS.toFixed(2)} | ${P.stepS} | ${(100 * (r.stepS / P.stepS - 1)).toFixed(1)}% | ${r.bubbleS.toFixed(2)} | ${P.bubbleS} | ${pct(r.mfuNonCausal)} | ${pct(r.mfuCausal)} | ${pct(P.mfuCausal)}–${pct(P.mfuNonCausal)} | ${(r.cand.memoryBytes / 1e9).toFixed(1)} | ${r.fits ? 'yes' : 'no'} |`,
  );
}
process.stdout.write(lines.join('\n') + '\n');
