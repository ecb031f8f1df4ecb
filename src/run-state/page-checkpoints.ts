/** The page's checkpoints: this origin's IndexedDB (opened on first use), shared by the run controls and window.pipelab. */
import { CheckpointStore } from './checkpoint-store.ts';
import { IdbShelf } from './idb-shelf.ts';

export const pageCheckpoints = new CheckpointStore(new IdbShelf());
