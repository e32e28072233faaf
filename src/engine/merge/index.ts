/**
 * The MERGE engine, append and replace: stage a DuckDB batch's write into a Delta table (data files
 * uploaded, commit planned); the caller commits.
 */
export { stageMerge } from './merge.js';
export { stageAppend } from './append.js';
export { stageReplace } from './replace.js';
export { stageScd2 } from './scd2.js';
export { TOMBSTONE_ORDER } from './temp-names.js';
export type { AppendOptions, MergeOptions, WriteTarget } from './options.js';
export { writeSummary } from './results.js';
export type { DeletedKeys, StagedWrite, WriteSummary } from './results.js';
