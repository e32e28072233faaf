/**
 * What a long-lived peer process (and its children: PySpark's JVM) used during one step, read
 * from Linux's /proc: CPU time (utime + stime of every thread) and the peak resident memory
 * (VmHWM, reset before the step by writing 5 to clear_refs, as ../peak-rss.ts does for the
 * benchmark's own process). Peaks of several processes are summed, an upper bound of their
 * combined peak.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

const MS_PER_TICK = 10; // USER_HZ is 100 on Linux

/** The process and its descendants, found by their parent pids. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = statFields(Number(name))?.[1];
    if (ppid === undefined) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

/** Fields of /proc/PID/stat after the command name (state, ppid, …), as numbers; null when gone. */
function statFields(pid: number): number[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text
      .slice(text.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
  } catch {
    return null;
  }
}

function cpuMs(pid: number): number {
  const f = statFields(pid);
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name and state
  return f === null ? 0 : (f[11]! + f[12]!) * MS_PER_TICK;
}

function peakKiB(pid: number): number {
  try {
    return Number(
      /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0,
    );
  } catch {
    return 0;
  }
}

/** A step being measured on a process tree; `stop()` gives its CPU time and peak RSS. */
export interface UsageWatch {
  stop(): { cpuMs: number; peakRssBytes: number };
}

/** Reset the peaks of `root`'s tree and note its CPU time so far. */
export function watchUsage(root: number): UsageWatch {
  const pids = processTree(root);
  for (const pid of pids) {
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      // a process that exited meanwhile
    }
  }
  const before = new Map(pids.map((p) => [p, cpuMs(p)]));
  return {
    stop() {
      const now = processTree(root);
      const cpu = now.reduce((n, p) => n + cpuMs(p) - (before.get(p) ?? 0), 0);
      return { cpuMs: cpu, peakRssBytes: now.reduce((n, p) => n + peakKiB(p), 0) * 1024 };
    },
  };
}
