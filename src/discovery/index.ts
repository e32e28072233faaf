/**
 * Discovery: which source files a run loads. `discover` lists and plans (never downloads);
 * `nextStateFor` folds each loaded batch into the state committed with it.
 */
export { discover, nextStateFor, DEFAULT_LIST_CONCURRENCY, type DiscoverOptions } from './discover.js';
export {
  resolveDiscovery,
  DEFAULT_LOOKBACK,
  DEFAULT_ON_OVERWRITE,
  DEFAULT_SETTLE_MS,
  type DiscoveryConfig,
  type ModifiedDiscoveryConfig,
  type OnOverwrite,
  type PartitionDiscoveryConfig,
} from './config.js';
export { compileKeyFilter, globProblem, SELECT_ALL, type KeyFilter, type KeyFilterConfig } from './filter.js';
export type { Decision, DecisionReason, DiscoveredFile, DiscoveryPlan, DiscoveryWindow, SkippedFolder } from './plan.js';
export {
  upgradeState,
  DiscoveryStateError,
  STATE_VERSION,
  type DiscoveryState,
  type ModifiedState,
  type PartitionState,
} from './state.js';
export { Layout } from './layout.js';
export { PartitionClock } from './zone.js';
