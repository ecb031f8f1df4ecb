export * from './run-controller.ts';
export * from './checkpoint-actions.ts';
export * from './speed-estimate.ts';
export * from './trained-model.ts';
export * from './prepare-workers.ts';
export * from './gpt-sizing.ts';
