/**
 * The watermark as users see it: a partition id (`2026-11-03`, `2026-11-03T07`) or an ISO timestamp (by notifications: the newest
 * LastModified loaded, which decides nothing).
 */
import type { DiscoveryState } from '../discovery/index.js';

/** Printable watermark of a discovery state, or null before the first load. */
export function describeWatermark(state: DiscoveryState | null | undefined): string | null {
  if (!state) return null;
  if (state.mode === 'partition') return state.watermark;
  return state.watermark === null ? null : new Date(state.watermark).toISOString();
}
