/**
 * The MERGE engine and append mode: write a DuckDB batch into a Delta table.
 */
export { mergeIntoTable } from './merge.js';
export { appendToTable } from './append.js';
export { TOMBSTONE_ORDER } from './names.js';
export type { AppendOptions, AppendResult, DeletedKeys, MergeDurations, MergeOptions, MergeResult, WriteTarget } from './types.js';
