/** The pure side of schedules: everything a runtime, view or CLI needs. */
export type { Action, Op, Schedule } from './types.ts';
export { OPS } from './types.ts';
export type { CollectiveKind, CommKind, Interval, RankUsage, Timeline, TimelineStats } from './timeline.ts';
export { bubbleFraction, computeOnly, isCompute, laneCount, laneOf, timelineMesh, withEpLanes, makespan, meanByStageOp, meanOpTimes, rankUsage, timelineStats } from './timeline.ts';
export { chunkBounds, laneLabel, mesh, meshOfRun, placeOf, rankGroup, replicaRows, ringNext, ringPrev, stageGroup, tpGroup, workerCount, workerOf, workers, type Mesh, type WorkerPlace } from './mesh.ts';
export { formatAction, parseAction } from './action-text.ts';
export { stageToRankMap, stagesOfRanks, type Placement } from './placement.ts';
export { autoSchedule, type AutoResult, type MemoryCap } from './generators/auto.ts';
export {
  DEFAULT_AUTO_COSTS,
  generateSchedule,
  generateWindow,
  windowMicrobatches,
  RUN_SCHEDULE_NAMES,
  scheduleKind,
  SCHEDULES,
  SCHEDULE_NAMES,
  MAX_ACTIONS,
  MAX_MICROBATCHES,
  MAX_RANKS,
  MAX_VIRTUAL,
  runsAsStream,
  savesCheckpoints,
  keepsPreviousVersion,
  gradSumEvery,
  type RunScheduleName,
  type ScheduleKind,
  type ScheduleName,
} from './registry.ts';
export { streamMeshRefusal, takesNoReplicas, type StreamMeshRefusal } from './stream-replicas.ts';
export {
  assertValidSchedule,
  summarizeSchedule,
  validateSchedule,
  type ScheduleSummary,
  type ValidationFailure,
  type ValidationResult,
} from './validate.ts';
export {
  costsPerStage,
  DEFAULT_OP_COSTS,
  linkDelayOf,
  peakMemory,
  predictions,
  resolveCosts,
  simulate,
  simulateStep,
  type StepSummary,
  type CostModel,
  type PerLink,
  type PerStage,
  type Predictions,
  type RankMemory,
  type ResolvedCosts,
  type DataParallelStep,
  type TensorParallelStep,
  type SimulationResult,
} from './simulate.ts';
export { checkAllReduceCosts, linkWindows, ringAllReduceTime, ringExchangeTime, type AllReduceCosts } from './allreduce-cost.ts';
export { MAX_SIM_DP } from './simulate-mesh.ts';
export { abstractTpCosts, tpClosedForm, tpGradSumTime, tpExchangeTime, tpLayerMessages, tpOpTimes, tpSentBytes, tpSplitCompute, tpStageMessages, type TpCosts, type TpLayer, type TpMessage, type TpOpMessages } from './tp-cost.ts';
export { allToAllTime, epClosedForm, epOpTimes, withAllToAll, type AllToAllLink, type EpCosts } from './ep-cost.ts';
export { closedForm, closedFormBubble, closedFormPeakActivations, meshClosedForm, streamMeshClosedForm, type ClosedForm, type MeshClosedForm, type MeshCosts } from './theory.ts';
export { CSV_LIMITS, CsvError, fromCsv, parseCsv, splitCsv, toCsv, type CsvWriteOptions, type ParsedCsv } from './csv.ts';
export { toChromeTrace, type ChromeTrace, type CounterTrack, type TraceEvent } from './chrome-trace.ts';
