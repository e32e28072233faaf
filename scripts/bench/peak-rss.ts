/**
 * Peak resident memory of one measured step. Linux keeps the process's high-water mark
 * (VmHWM) and lets a process reset it (`5` into /proc/self/clear_refs), so steps run one after
 * another in one process each get their own peak instead of the largest so far. Elsewhere the
 * process's lifetime peak is all there is, and the figure says so.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** A peak RSS in bytes, and whether it covers only the step (false: since the process started). */
export interface PeakRss {
  bytes: number;
  perStep: boolean;
}

/** Reset the high-water mark; false when the platform cannot. */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** The high-water mark since the last reset (or since the process started). */
export function readPeakRss(perStep: boolean): PeakRss {
  try {
    const kib = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kib !== undefined) return { bytes: Number(kib) * 1024, perStep };
  } catch {
    // not Linux: fall through
  }
  return { bytes: process.resourceUsage().maxRSS * 1024, perStep: false };
}
