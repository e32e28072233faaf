/**
 * Discovery: which source files a run loads. `discover` lists and plans (never downloads);
 * `nextStateFor` folds each loaded batch into the state committed with it.
 */
export { discover, nextStateFor, stateMismatch } from './discover.js';
export { overlapMs, withKnownFiles, withPassedOver, type PassedOver } from './by-modified.js';
export type { DiscoveryConfig } from './config.js';
export { notificationStateAfter, withLedgerAnswers } from './notifications/plan.js';
export type { HeldMessage, NotificationIntake } from './notifications/intake.js';
export { BEHIND_WINDOW_REASONS, type DiscoveredFile, type DiscoveryPlan } from './plan.js';
export {
  upgradeState,
  type DiscoveryState,
  type ModifiedState,
  type NotificationState,
  type PartitionState,
} from './state.js';
export { Layout } from './layout.js';
export {
  describeMismatch,
  surveySource,
  type LayoutMismatch,
  type SourceSurvey,
} from './survey.js';
export { PartitionClock } from './zone.js';
