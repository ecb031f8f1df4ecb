export * from './report.ts';
export * from './report-types.ts';
export * from './report-collectives.ts';
export * from './report-copies.ts';
export * from './report-step-end.ts';
export * from './report-tp.ts';
export * from './held-bytes.ts';
export * from './weight-agreement.ts';
