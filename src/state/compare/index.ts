export * from './compare.ts';
export * from './compare-table.ts';
export * from './cut-runs.ts';
export * from './dp-pp-measure.ts';
export * from './dp-pp-preset.ts';
export * from './dp-tp-pp-preset.ts';
export * from './zero-preset.ts';
export * from './what-wins.ts';
