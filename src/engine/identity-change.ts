/**
 * What a node's answer to `INFO` says about the locks it may have lost: pure functions over
 * its run_ids and uptimes, the time it was read, and when its previous server last answered.
 */

/** One server's part of an `INFO` reply. */
export interface ServerInfo {
  readonly runId: string;
  /**
   * `uptime_in_seconds`, in ms. Redis subtracts its start from its clock, both in whole
   * seconds: a server up 0.1 s may say 1, one up 1.9 s may say 1. Its real uptime is within a
   * second of this either way (see {@link leastUptimeMs}).
   */
  readonly uptimeMs: number;
}

/**
 * Why a node does not vote until `since` + the restart grace: the leases it may have lost
 * were granted before `since` (by the locker's clock).
 * - `restarted`: its run_id changed, and the new server surely started after the previous
 *   one last answered: a restart, which forgot every key (without persistence). `since` is
 *   its latest possible start, from its uptime.
 * - `changed`: its run_id changed, and the new server may have been running while the
 *   previous one still answered: a failover to a replica, an address now reaching another
 *   server, or a restart too quick to tell by whole seconds of uptime. The previous server
 *   may have granted leases until the change was seen: `since` is then.
 * - `young`: first seen, and may have been up for less than the grace (with
 *   `restartGraceMs`; by default, on several nodes, when its server did not keep its own
 *   lease record): it may have restarted just before. `since` is its latest possible start.
 */
export interface IdentityChange {
  readonly reason: 'restarted' | 'changed' | 'young';
  readonly since: number;
  /** The new server's uptime when it was read (the youngest, for a Cluster). */
  readonly uptimeMs: number;
  /**
   * The grace, when it was fixed as the change was seen (the longest lease on record then:
   * a lease recorded later was granted after the change); else the locker's own setting.
   */
  readonly graceMs?: number;
}

/** The servers an `INFO` reply speaks for: one, or each master of a Redis Cluster. */
export function serversIn(info: string): ServerInfo[] {
  const servers: ServerInfo[] = [];
  // A Redis Cluster answers with the INFO of each of its masters, one after the other.
  for (const section of info.split(/^(?=# Server\r?$)/m)) {
    const runId = /^run_id:([0-9a-f]+)/m.exec(section)?.[1];
    if (runId === undefined) continue;
    // No uptime counts as just started: the cautious reading.
    const uptimeS = Number(/^uptime_in_seconds:(\d+)/m.exec(section)?.[1] ?? 0);
    servers.push({ runId, uptimeMs: uptimeS * 1_000 });
  }
  return servers;
}

/** Whether `now` names a server that `before` did not. */
export function isNewIdentity(before: readonly string[], now: readonly string[]): boolean {
  return now.some((runId) => !before.includes(runId));
}

/**
 * How far the wall clock of the server that answered `info` is ahead of this process's
 * (`wallMs`: this process's wall clock when the answer arrived), taking the server's reading
 * (`server_time_usec`, Redis 6.2 and later) to be from halfway through the round trip: off
 * by at most half of it. `undefined` when INFO does not say.
 */
export function serverClockOffsetMs(
  info: string,
  { askedAt, readAt }: InfoRead,
  wallMs: number,
): number | undefined {
  const serverUs = /^server_time_usec:(\d+)/m.exec(info)?.[1];
  if (serverUs === undefined) return undefined;
  return Number(serverUs) / 1_000 - (wallMs - (readAt - askedAt) / 2);
}

/** When an `INFO` was sent, and when its answer arrived (the locker's clock). */
export interface InfoRead {
  readonly askedAt: number;
  readonly readAt: number;
}

/**
 * The least a server that says `uptimeMs` may have been up: a second less (Redis counts its
 * uptime in whole seconds of its clock, see {@link ServerInfo.uptimeMs}).
 */
export function leastUptimeMs(uptimeMs: number): number {
  return Math.max(0, uptimeMs - 1_000);
}

/**
 * What a new identity means, by an `INFO` sent at `read.askedAt` and answered at
 * `read.readAt`. `lastAnsweredAt`: when the node's previous server last answered, `undefined`
 * when unknown. Only a server that surely started after that (its earliest start: the
 * uptime it says, a second more, before `askedAt`) counts as restarted, and its lost leases
 * count from its latest start (a second less, before `readAt`); any other may have been
 * serving alongside, so its predecessor's leases count from `readAt`, the latest they can
 * have been granted through this node's address as the locker saw it.
 */
export function changeOf(
  before: readonly string[],
  servers: readonly ServerInfo[],
  read: InfoRead,
  lastAnsweredAt: number | undefined,
): IdentityChange {
  const uptimeMs = youngest(servers.filter((s) => !before.includes(s.runId)));
  const earliestStart = read.askedAt - uptimeMs - 1_000;
  const restarted = lastAnsweredAt !== undefined && earliestStart > lastAnsweredAt;
  return {
    reason: restarted ? 'restarted' : 'changed',
    since: restarted ? read.readAt - leastUptimeMs(uptimeMs) : read.readAt,
    uptimeMs,
  };
}

/**
 * A server seen for the first time, its `INFO` answered at `readAt`: `young` while it may
 * have been up for less than `graceMs` (counted from its latest start).
 */
export function youngOnArrival(
  servers: readonly ServerInfo[],
  readAt: number,
  graceMs: number,
): IdentityChange | undefined {
  const uptimeMs = youngest(servers);
  const upMs = leastUptimeMs(uptimeMs);
  return upMs < graceMs ? { reason: 'young', since: readAt - upMs, uptimeMs } : undefined;
}

function youngest(servers: readonly ServerInfo[]): number {
  return Math.min(...servers.map((s) => s.uptimeMs));
}

/**
 * Why a node abstains, for its vote's error: what happened, how long ago, and until when.
 * `grace` names the restart grace and where it comes from; `until` is when the node votes
 * again (`since` + grace + drift).
 */
export function abstentionReason(
  change: IdentityChange,
  now: number,
  grace: string,
  until: number,
): string {
  const ago = seconds(now - change.since);
  const left = `${seconds(until - now)} s from now`;
  switch (change.reason) {
    case 'restarted':
      return `restarted ${ago} s ago (its run_id changed) and may have lost the locks it held: it abstains until every lease it could have granted has run out, ${grace} after its restart (${left})`;
    case 'changed':
      return `answers as another server, seen ${ago} s ago (its run_id changed: a restart, a failover, or its address now reaches another server; up ${change.uptimeMs / 1_000} s), which may lack the locks the previous one held: it abstains until every lease that one could have granted has run out, ${grace} after the change (${left})`;
    case 'young':
      return `started ${ago} s ago and may have lost the locks it held before: it abstains until it has been up for ${grace} (${left})`;
  }
}

function seconds(ms: number): string {
  return (Math.max(0, ms) / 1_000).toFixed(1);
}
