import type { HistoryReport, Holding, Write } from '../src/testing/index.js';
import { type HandOffStats, handOffStats } from './handoff.js';
import type { NodeLane } from './nodes.js';

/** A fault the demo injected, at `at` ms after the start. */
export interface Fault {
  readonly at: number;
  readonly label: string;
}

/** What the report shows; the violations are whatever the history checker found. */
export interface ReportInput {
  /** The demo's start on the workers' monotonic clock (ms); the page counts from it. */
  readonly startedAt: number;
  readonly holdings: readonly Holding[];
  /** One lane per lock node, in ms from the start. */
  readonly nodes: readonly NodeLane[];
  readonly faults: readonly Fault[];
  readonly violations: Pick<HistoryReport, 'overlaps' | 'fencesOutOfOrder' | 'lostWrites'>;
  /** The summary lines the demo printed. */
  readonly summary: readonly string[];
}

/** A holding as the page draws it: worker index into `workers`, times in ms from the start. */
export interface PageHolding {
  readonly worker: number;
  readonly fromMs: number;
  readonly toMs: number;
  readonly fence: string;
}

/** A write as the page draws it (fence inversions). */
export interface PageWrite {
  readonly worker: number;
  readonly atMs: number;
  readonly fence: string;
}

/** The JSON embedded in the page; demo/page/*.js reads exactly this. */
export interface ReportData {
  readonly summary: readonly string[];
  /** Length of the timeline: the last thing that happened, in ms from the start. */
  readonly spanMs: number;
  readonly workers: readonly string[];
  /** Sorted by `fromMs`. */
  readonly holdings: readonly PageHolding[];
  readonly nodes: readonly NodeLane[];
  readonly faults: readonly { readonly atMs: number; readonly label: string }[];
  readonly overlaps: readonly { readonly first: PageHolding; readonly second: PageHolding }[];
  readonly fenceInversions: readonly { readonly earlier: PageWrite; readonly later: PageWrite }[];
  readonly lostWrites: HistoryReport['lostWrites'];
  readonly handOff: HandOffStats;
}

/** Turns the demo's history into the page's data: relative times, worker indexes, histogram. */
export function toReportData(input: ReportInput): ReportData {
  const { startedAt, holdings, violations } = input;
  const names = [
    ...holdings.map((h) => h.worker),
    ...violations.overlaps.flatMap((o) => [o.first.worker, o.second.worker]),
    ...violations.fencesOutOfOrder.flatMap((f) => [f.earlier.worker, f.later.worker]),
  ];
  const workers = [...new Set(names)].sort();
  const relative = (t: number) => round(t - startedAt);
  const holding = (h: Holding): PageHolding => ({
    worker: workers.indexOf(h.worker),
    fromMs: relative(h.acquiredAt),
    toMs: relative(h.releasedAt),
    fence: h.fence ?? '',
  });
  const write = (w: Write): PageWrite => ({
    worker: workers.indexOf(w.worker),
    atMs: relative(w.at),
    fence: w.fence ?? '',
  });
  const pageHoldings = holdings.map(holding).sort((a, b) => a.fromMs - b.fromMs);
  const faults = input.faults.map((f) => ({ atMs: round(f.at), label: f.label }));
  return {
    summary: input.summary,
    spanMs: timelineSpanMs(input),
    workers,
    holdings: pageHoldings,
    nodes: input.nodes,
    faults,
    overlaps: violations.overlaps.map((o) => ({
      first: holding(o.first),
      second: holding(o.second),
    })),
    fenceInversions: violations.fencesOutOfOrder.map((f) => ({
      earlier: write(f.earlier),
      later: write(f.later),
    })),
    lostWrites: violations.lostWrites,
    handOff: handOffStats(holdings),
  };
}

/**
 * Length of the report's timeline: from the start to the last thing that happened (a release,
 * the end of a node lane, a fault), in ms. The summary's duration is this one.
 */
export function timelineSpanMs(
  input: Pick<ReportInput, 'startedAt' | 'holdings' | 'nodes' | 'faults'>,
): number {
  const spanMs = Math.max(
    1,
    ...input.holdings.map((h) => round(h.releasedAt - input.startedAt)),
    ...input.nodes.flatMap((n) => n.segments.map((s) => s.toMs)),
    ...input.faults.map((f) => round(f.at)),
  );
  return round(spanMs);
}

/** Microsecond precision is plenty for a picture, and keeps the JSON small. */
function round(ms: number): number {
  return Math.round(ms * 1_000) / 1_000;
}
