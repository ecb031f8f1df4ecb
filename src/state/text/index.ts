export * from './text-load-protocol.ts';
export * from './text-shelf.ts';
export * from './text-source.ts';
