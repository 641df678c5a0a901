import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { lockerSettings } from '../../src/config/options.js';
import { NotSentError, type RedisConnection } from '../../src/driver/connection.js';
import { StallGuard } from '../../src/driver/stall-guard.js';
import { countedNodes } from '../../src/engine/counted-nodes.js';
import type { NodeSet } from '../../src/engine/every-node.js';
import {
  changeOf,
  serverClockOffsetMs,
  serversIn,
  youngOnArrival,
} from '../../src/engine/identity-change.js';
import {
  CLUSTER_RECHECK_MS,
  IDENTITY_RECHECK_MS,
  NodeIdentities,
  type ServerInspection,
} from '../../src/engine/node-identity.js';
import { replyOfEveryNode } from '../../src/engine/node-replies.js';
import { InvalidArgumentError } from '../../src/errors.js';

const RUN_A = 'a'.repeat(40);
const RUN_B = 'b'.repeat(40);
const RUN_C = 'c'.repeat(40);

/** INFO of one server, as Redis words it. */
function info(runId: string, uptimeS: number): string {
  return `# Server\r\nredis_version:7.0.15\r\nrun_id:${runId}\r\nuptime_in_seconds:${uptimeS}\r\n`;
}

function fakeClock(): Clock & { advance(ms: number): void } {
  let now = 100_000;
  return { now: () => now, advance: (ms) => (now += ms) };
}

/** A node whose server (run_id, uptime) and connection generation a test sets. */
interface ScriptedServer {
  runId: string;
  uptimeS: number;
  generation: number | undefined;
  infos: number;
  /** Its lease record (`<ttlMs> <server>`), as the record-lease script keeps it. */
  leaseRecord?: string | undefined;
  /** How long it takes to answer each command (ms). */
  replyDelayMs?: number;
  /** How long it takes to answer INFO (ms), the other commands answered at once. */
  infoDelayMs?: number;
  /** Called as each GET (of its lease record) arrives, before it is answered. */
  onGet?: (() => void) | undefined;
  /** Not connected: nothing is sent. */
  down?: boolean;
  /** Called as each record-lease script arrives, before it runs. */
  onRecord?: (() => void) | undefined;
}

/** What the record-lease script does, on a scripted server: KEYS[1], ARGV ttlMs, server. */
function recordLease(server: ScriptedServer, args: readonly (string | number)[]): number {
  const [, , , ttlMs, name] = args;
  const longest = Math.max(Number(server.leaseRecord?.split(' ')[0] ?? 0), Number(ttlMs));
  server.leaseRecord = `${longest} ${name}`;
  return longest;
}

function scripted(
  name: string,
  runId: string,
  uptimeS = 3_600,
): {
  server: ScriptedServer;
  connection: RedisConnection;
} {
  const server: ScriptedServer = { runId, uptimeS, generation: 1, infos: 0 };
  const connection: RedisConnection = {
    name,
    get generation() {
      return server.generation;
    },
    close: async () => {},
    send: async (command, args) => {
      if (server.down) throw new NotSentError(`not connected to ${name}`);
      if (server.replyDelayMs) await delay(server.replyDelayMs);
      if (command === 'INFO') {
        if (server.infoDelayMs) await delay(server.infoDelayMs);
        server.infos++;
        return info(server.runId, server.uptimeS);
      }
      if (command === 'GET') {
        server.onGet?.();
        return server.leaseRecord ?? null;
      }
      if (command === 'EVAL' || command === 'EVALSHA') {
        server.onRecord?.();
        return recordLease(server, args);
      }
      return 'OK';
    },
  };
  return { server, connection };
}

/** Identities over scripted nodes, with their warnings. */
function over(
  runIds: readonly string[],
  restartGraceMs?: number,
  { nodeTimeoutMs, inspect }: { nodeTimeoutMs?: number; inspect?: ServerInspection } = {},
) {
  const clock = fakeClock();
  const made = runIds.map((runId, i) => scripted(`node${i}`, runId));
  const set: NodeSet = {
    nodes: made.map((m) => new StallGuard(m.connection, clock)),
    settings: lockerSettings({
      nodes: ['redis://unused:1'],
      driftFactor: 0,
      ...(nodeTimeoutMs === undefined ? {} : { nodeTimeoutMs }),
    }),
    clock,
  };
  const warnings: string[] = [];
  const identities = new NodeIdentities(runIds.length, {
    restartGraceMs,
    warn: (index, code) => warnings.push(`${index} ${code}`),
    ...(inspect ? { inspect } : {}),
  });
  const check = () => identities.check(set, 10_000);
  const votes = (ttlMs = 10_000) => runIds.map((_, i) => identities.known(i, ttlMs));
  return { identities, set, clock, servers: made.map((m) => m.server), warnings, check, votes };
}

describe('INFO replies', () => {
  it('give each server its run_id and uptime, for one server and for a Cluster', () => {
    expect(serversIn(info(RUN_A, 12))).toEqual([{ runId: RUN_A, uptimeMs: 12_000 }]);
    expect(serversIn(info(RUN_A, 1) + info(RUN_B, 2)).map((s) => s.runId)).toEqual([RUN_A, RUN_B]);
    expect(serversIn('# Server\r\nredis_version:7.0.15\r\n')).toEqual([]);
  });

  it("give the server's clock offset, its reading taken as from halfway through the round trip", () => {
    // Asked at 100 and answered at 140 (monotonic); this process's wall clock said 5 000 at
    // the answer, so 4 980 halfway; the server said 65 000.5 ms then.
    const said = `${info(RUN_A, 1)}server_time_usec:65000500\r\n`;
    expect(serverClockOffsetMs(said, { askedAt: 100, readAt: 140 }, 5_000)).toBe(60_020.5);
    // A Cluster's first master's reading; a server before Redis 6.2 does not say.
    expect(serverClockOffsetMs(said + info(RUN_B, 2), { askedAt: 0, readAt: 0 }, 0)).toBe(65_000.5);
    expect(serverClockOffsetMs(info(RUN_A, 1), { askedAt: 0, readAt: 0 }, 0)).toBeUndefined();
  });
});

describe('what a new identity means', () => {
  const servers = [{ runId: RUN_B, uptimeMs: 3_000 }];
  const read = { askedAt: 9_990, readAt: 10_000 };

  it('a restart: the server surely started after the previous one last answered', () => {
    // Asked at 9 990, says up 3 s (whole seconds of its clock: between 2 and 4): started
    // between 5 990 and 8 000; the previous one answered last at 5 000.
    expect(changeOf([RUN_A], servers, read, 5_000)).toEqual({
      reason: 'restarted',
      since: 8_000,
      uptimeMs: 3_000,
    });
  });

  it('otherwise counted from when the change was seen: it may have served alongside', () => {
    // Started at 5 990 at the earliest: it may predate the last answer.
    expect(changeOf([RUN_A], servers, read, 5_995)).toMatchObject({
      reason: 'changed',
      since: 10_000,
    });
    expect(changeOf([RUN_A], servers, read, undefined)).toMatchObject({ since: 10_000 });
  });

  it('a server first seen is young while it may have been up for less than the grace', () => {
    expect(youngOnArrival(servers, 10_000, 5_000)).toEqual({
      reason: 'young',
      since: 8_000,
      uptimeMs: 3_000,
    });
    // Saying 3 s, it may have been up for 2.001 s only.
    expect(youngOnArrival(servers, 10_000, 3_000)).toMatchObject({ since: 8_000 });
    expect(youngOnArrival(servers, 10_000, 2_000)).toBeUndefined();
  });

  it('reads a server that says 1 s as one that may have started just now', () => {
    // Redis says 1 s 0.1 s after its start when a second of its clock ticked over meanwhile.
    const just = [{ runId: RUN_B, uptimeMs: 1_000 }];
    expect(youngOnArrival(just, 10_000, 4_000)).toMatchObject({ since: 10_000 });
    expect(changeOf([RUN_A], just, read, 7_000)).toMatchObject({
      reason: 'restarted',
      since: 10_000,
    });
  });
});

describe('NodeIdentities', () => {
  it('asks nothing once every node answered on its current connection', async () => {
    const { check, servers } = over([RUN_A, RUN_B, RUN_C]);
    await check();
    expect(check()).toBeUndefined(); // the hot path: not even a resolved promise
    expect(servers.map((s) => s.infos)).toEqual([1, 1, 1]);
  });

  it("waits for the nodes' first answers beyond the per-node timeout: meeting them is not a vote", async () => {
    // A first acquisition that allows one attempt (`waitMs: 0`) on a loaded machine: INFO
    // and the lease records answered in 10 times the per-node timeout, and well within the
    // connection grace. Without the grace, no node would vote in that attempt. Node 2 is
    // down from the start.
    const { check, servers, votes } = over([RUN_A, RUN_B, RUN_C], undefined, { nodeTimeoutMs: 5 });
    for (const server of servers) server.replyDelayMs = 50;
    (servers[2] as ScriptedServer).down = true;
    await check();
    expect(votes()).toEqual([true, true, false]);
    // Later rounds keep the per-node timeout, though node 2 was never met: node 1, which
    // reconnects and answers slowly, counts from the next attempt on.
    (servers[1] as ScriptedServer).generation = 2;
    await check();
    expect(votes()).toEqual([true, false, false]);
  });

  it('records a longer lease asked for while a round was recording a shorter one, before the caller goes on', async () => {
    // Two acquisitions of a new locker: the second (a 60 s lease) joins the first's round
    // (10 s) once that round is writing its lease records. Going on after that round, its
    // attempt would find no node with a 60 s lease on record: no vote, and a `tryAcquire`
    // failed for nothing.
    const { check, servers, votes, identities, set } = over([RUN_A, RUN_B, RUN_C]);
    let joined: Promise<void> | undefined;
    (servers[0] as ScriptedServer).onRecord = () => {
      (servers[0] as ScriptedServer).onRecord = undefined;
      joined = identities.check(set, 60_000);
    };
    await check();
    expect(joined).toBeInstanceOf(Promise);
    await joined;
    expect(votes(60_000)).toEqual([true, true, true]);
    expect(servers.map((s) => s.leaseRecord)).toEqual(
      [RUN_A, RUN_B, RUN_C].map((r) => `60000 ${r}`),
    );
  });

  it('waits no longer than its own per-node timeout in a round that a read started', async () => {
    // A monitoring read (`inspect`, 2 s per node) asks node 2, which reconnected and is slow
    // to answer INFO. An acquisition (20 ms per node) that joins that round goes on after its
    // own 20 ms, with the two nodes that vote. Before: it waited for node 2's INFO.
    const { check, identities, servers, set, votes } = over([RUN_A, RUN_B, RUN_C], undefined, {
      nodeTimeoutMs: 20,
    });
    await check();
    const slow = servers[2] as ScriptedServer;
    Object.assign(slow, { generation: 2, infoDelayMs: 1_000 });
    const reading = identities.checkForRead(set, 2_000);
    await check();
    expect(slow.infos).toBe(1); // the round still waits for node 2's second answer
    expect(votes()).toEqual([true, true, false]);
    await reading;
    expect(slow.infos).toBe(2);
    expect(votes()).toEqual([true, true, true]);
  });

  it("keeps the first contact's grace when it joins a locker's first round, a read's", async () => {
    const { check, identities, servers, set, votes } = over([RUN_A, RUN_B, RUN_C], undefined, {
      nodeTimeoutMs: 5,
    });
    for (const server of servers) server.replyDelayMs = 50;
    const reading = identities.checkForRead(set, 2_000);
    await check(); // as if it had asked first: the grace, not its 5 ms
    expect(votes()).toEqual([true, true, true]);
    await reading;
  });

  it('gives no vote to a server said before the round compared it with the others', async () => {
    // One server listed twice (nodes 0 and 1), no lease records (restartGraceMs given), node 2
    // slow to answer. An acquisition that leaves the read's first round after its own timeout
    // must not count nodes 0 and 1, though each said which server it is.
    const { check, identities, servers, set, votes } = over([RUN_A, RUN_A, RUN_C], 1_000, {
      nodeTimeoutMs: 5,
    });
    (servers[2] as ScriptedServer).infoDelayMs = 1_000;
    const reading = identities.checkForRead(set, 2_000);
    await check();
    expect(votes()).toEqual([false, false, false]);
    await expect(reading).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(check()).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('compares a server said after its round was over, and warns, as soon as it is said', async () => {
    // Node 2 reconnects to node 0's server and says so after the round's 20 ms; with
    // restartGraceMs 0 a changed node does not abstain. Before: it voted, one server twice,
    // until a later round, and its NODE_IDENTITY_CHANGED warning was never given.
    const { check, servers, votes, warnings } = over([RUN_A, RUN_B, RUN_C], 0, {
      nodeTimeoutMs: 20,
    });
    await check();
    const late = servers[2] as ScriptedServer;
    Object.assign(late, { generation: 2, runId: RUN_A, infoDelayMs: 100 });
    await check();
    expect(late.infos).toBe(1);
    await delay(300); // its answer arrives, after the round
    expect(late.infos).toBe(2);
    expect(votes()).toEqual([true, true, false]);
    expect(warnings).toEqual(['2 NODE_IDENTITY_CHANGED', '2 NODE_DUPLICATE']);
    expect(check()).toBeUndefined(); // nothing left to ask
  });

  it("keeps a node whose late answer says it changed out for the fleet's longest lease, read again", async () => {
    const { check, clock, identities, servers, warnings } = over([RUN_A, RUN_B, RUN_C], undefined, {
      nodeTimeoutMs: 20,
    });
    await check(); // this locker's 10 s lease recorded on every node
    for (const server of servers) server.leaseRecord = `60000 ${server.runId}`; // another's
    const restarted = servers[0] as ScriptedServer;
    Object.assign(restarted, { runId: 'd'.repeat(40), generation: 2, infoDelayMs: 100 });
    restarted.leaseRecord = undefined;
    await check(); // gives up on node 0 after 20 ms
    await delay(300); // its answer comes, then the records are read
    expect(warnings).toEqual(['0 NODE_IDENTITY_CHANGED']);
    clock.advance(30_000);
    // Before: it abstained for the 10 s it knew of, and voted again by now.
    expect(identities.unreadable(0)?.message).toMatch(/60000 ms restart grace/);
  });

  it('keeps a node that changed out while the records are read again, whatever is asked meanwhile', async () => {
    // Node 0 restarted 19 s ago; the 10 s grace this locker knew of is over, but another
    // locker recorded a 60 s lease, which the records read again will tell. A check made
    // during that read must not end the abstention. Before: it did, for good.
    const { check, clock, identities, servers } = over([RUN_A, RUN_B, RUN_C], undefined, {
      nodeTimeoutMs: 20,
    });
    await check();
    for (const server of servers) server.leaseRecord = `60000 ${server.runId}`;
    clock.advance(40_000);
    const restarted = servers[0] as ScriptedServer;
    Object.assign(restarted, { runId: 'd'.repeat(40), uptimeS: 19, generation: 2 });
    Object.assign(restarted, { infoDelayMs: 100, leaseRecord: undefined });
    await check(); // gives up on node 0 after 20 ms
    let during: Promise<void> | undefined;
    const other = servers[1] as ScriptedServer;
    other.onGet = () => {
      other.onGet = undefined;
      during = check() ?? Promise.resolve(); // as the records are read again
    };
    await delay(300); // node 0's answer, then the records
    expect(during).toBeInstanceOf(Promise);
    await during;
    expect(identities.unreadable(0)?.message).toMatch(/60000 ms restart grace/);
  });

  it('takes a refusal found while it waited, when it leaves a round early', async () => {
    // `inspect` refuses node 0 as soon as its INFO is in; node 2 answers after 1 s. The
    // acquisition leaves the read's round after the first contact's grace: refused.
    const refused = new Error('node 0 refused');
    const { check, identities, servers, set } = over([RUN_A, RUN_B, RUN_C], undefined, {
      nodeTimeoutMs: 5,
      inspect: (index) => (index === 0 ? refused : undefined),
    });
    (servers[2] as ScriptedServer).infoDelayMs = 1_000;
    const reading = identities.checkForRead(set, 2_000);
    await expect(check()).rejects.toBe(refused);
    expect((servers[2] as ScriptedServer).infos).toBe(0); // it left before the round ended
    await expect(reading).rejects.toBe(refused);
  });

  it('lets a read on one node go on while that node is asked again in the background', async () => {
    const { check, identities, servers, set } = over([RUN_A]);
    await check();
    (servers[0] as ScriptedServer).generation = 2; // reconnected: asked again, votes meanwhile
    expect(check()).toBeUndefined();
    expect(identities.checkForRead(set, 2_000)).toBeUndefined();
  });

  it("gives a read that joins an acquisition's round its own timeout", async () => {
    const { check, identities, servers, set } = over([RUN_A, RUN_B, RUN_C], undefined, {
      nodeTimeoutMs: 20,
    });
    await check();
    Object.assign(servers[2] as ScriptedServer, { generation: 2, infoDelayMs: 100 });
    const acquiring = check(); // a round of 20 ms
    await identities.checkForRead(set, 2_000); // joins it, then asks node 2 with 2 s
    await acquiring;
    expect(identities.unreadable(2)).toBeUndefined();
  });

  it('gives no vote to a node that reconnected until it answered again', async () => {
    const { check, servers, votes } = over([RUN_A, RUN_B, RUN_C]);
    await check();
    (servers[1] as ScriptedServer).generation = 2;
    expect(votes()).toEqual([true, false, true]);
    await check();
    expect(votes()).toEqual([true, true, true]); // the same server: no abstention
    expect((servers[1] as ScriptedServer).infos).toBe(2);
  });

  it('keeps a node that restarted out for the longest TTL used, and warns', async () => {
    const { check, clock, servers, votes, warnings, identities } = over([RUN_A, RUN_B, RUN_C]);
    await check();
    clock.advance(60_000);
    Object.assign(servers[0] as ScriptedServer, { runId: RUN_C.replace('c', 'd'), uptimeS: 0 });
    (servers[0] as ScriptedServer).generation = 2;
    await check();
    expect(warnings).toEqual(['0 NODE_IDENTITY_CHANGED']);
    expect(votes()).toEqual([false, true, true]);
    expect(identities.abstention(0)?.message).toMatch(/its run_id changed/);
    clock.advance(10_000 - 1);
    await check(); // records nothing on a node that abstains
    expect(votes()[0]).toBe(false);
    clock.advance(2 + 2); // the grace, and the drift allowance (2 ms at driftFactor 0)
    await check(); // records the lease on its new server, and then it votes
    expect(votes()[0]).toBe(true);
  });

  it('counts the grace from the restart that uptime shows, when it is known to be later', async () => {
    const { check, clock, servers, votes } = over([RUN_A, RUN_B, RUN_C]);
    await check();
    clock.advance(60_000);
    // Says up 6 s, noticed only now: restarted at least 5 s ago (its uptime is whole
    // seconds), so the lease it could have lost ends at most 5 s from now.
    Object.assign(servers[0] as ScriptedServer, { runId: 'e'.repeat(40), uptimeS: 6 });
    (servers[0] as ScriptedServer).generation = 2;
    await check();
    clock.advance(5_000);
    await check();
    expect(votes()[0]).toBe(false);
    clock.advance(2); // the drift allowance: 2 ms at driftFactor 0
    await check();
    expect(votes()[0]).toBe(true);
  });

  it('refuses a server listed twice, but only makes a re-pointed name abstain', async () => {
    const listed = over([RUN_A, RUN_A, RUN_C]);
    await expect(listed.check()).rejects.toMatchObject({ field: 'nodes[1]' });

    const { check, servers, votes, warnings, identities } = over([RUN_A, RUN_B, RUN_C]);
    await check();
    Object.assign(servers[2] as ScriptedServer, { runId: RUN_A, generation: 2 });
    await check();
    expect(votes()).toEqual([true, true, false]);
    expect(warnings).toEqual(['2 NODE_IDENTITY_CHANGED', '2 NODE_DUPLICATE']);
    expect(identities.abstention(2)?.message).toMatch(/same server as nodes\[0\]/);
    // Pointed back: no longer a duplicate, but another server again (it abstains the grace).
    Object.assign(servers[2] as ScriptedServer, { runId: RUN_C, generation: 3 });
    await check();
    expect(identities.abstention(2)?.message).toMatch(/its run_id changed/);
  });

  it('keeps a restarted node out of a fresh process for the longest lease on record elsewhere', async () => {
    const { check, clock, servers, votes, identities, set } = over([RUN_A, RUN_B, RUN_C]);
    // Another process's 8 s lease is on record on the nodes that kept their data; node 0
    // restarted empty, and says up 2 s: at least 1 s, by whole seconds. This locker asks for
    // 3 s leases (check's 10 s: below).
    for (const server of servers) server.leaseRecord = `8000 ${server.runId}`;
    Object.assign(servers[0] as ScriptedServer, { uptimeS: 2, leaseRecord: undefined });
    await identities.check(set, 3_000);
    expect(votes(3_000)).toEqual([false, true, true]);
    expect(identities.abstention(0)?.message).toMatch(
      /started 1\.0 s ago .* until it has been up for the 8000 ms restart grace \(the longest lease on record on the nodes\)/,
    );
    clock.advance(7_000 + 1); // up 8 s (at least), but for the drift allowance (2 ms)
    await check();
    expect(votes()[0]).toBe(false);
    clock.advance(1);
    await check();
    expect(votes()).toEqual([true, true, true]);
    expect((servers[0] as ScriptedServer).leaseRecord).toBe(`10000 ${RUN_A}`);
  });

  it('lets a young node that kept its own lease record vote at once', async () => {
    const { check, servers, votes } = over([RUN_A, RUN_B, RUN_C]);
    for (const server of servers) {
      server.leaseRecord = `8000 ${server.runId}`;
      server.uptimeS = 2; // the whole fleet just started, and one locker already locked
    }
    await check();
    expect(votes()).toEqual([true, true, true]);
  });

  it('keeps a node that restarted out for the longest lease on record, not only its own TTL', async () => {
    const { check, clock, servers, votes } = over([RUN_A, RUN_B, RUN_C]);
    await check();
    // Meanwhile another locker recorded a 30 s lease on every node.
    for (const server of servers) server.leaseRecord = `30000 ${server.runId}`;
    clock.advance(60_000);
    Object.assign(servers[0] as ScriptedServer, {
      runId: 'e'.repeat(40),
      uptimeS: 0,
      generation: 2,
      leaseRecord: undefined,
    });
    await check();
    clock.advance(10_000 + 100); // past this locker's own 10 s
    await check();
    expect(votes()[0]).toBe(false);
    clock.advance(20_000);
    await check();
    expect(votes()[0]).toBe(true);
  });

  it('on one node, only warns, and asks again in the background', async () => {
    const { check, servers, votes, warnings } = over([RUN_A]);
    await check();
    Object.assign(servers[0] as ScriptedServer, { runId: RUN_B, uptimeS: 0, generation: 2 });
    expect(votes()).toEqual([true]);
    expect(check()).toBeUndefined();
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual(['0 NODE_IDENTITY_CHANGED']);
    expect(votes()).toEqual([true]);
  });

  it('with restartGraceMs, also a single node, and a node first seen young, abstain', async () => {
    const { check, servers, votes } = over([RUN_A], 5_000);
    (servers[0] as ScriptedServer).uptimeS = 2;
    await check();
    expect(votes()).toEqual([false]);

    const zero = over([RUN_A, RUN_B, RUN_C], 0);
    await zero.check();
    Object.assign(zero.servers[0] as ScriptedServer, {
      runId: RUN_C.replace('c', 'f'),
      generation: 2,
    });
    await zero.check();
    expect(zero.votes()).toEqual([true, true, true]); // 0: no abstention, a warning only
    expect(zero.warnings).toEqual(['0 NODE_IDENTITY_CHANGED']);
  });

  it('asks a connection that does not report reconnects again every second', async () => {
    const { check, clock, servers } = over([RUN_A, RUN_B, RUN_C]);
    for (const server of servers) server.generation = undefined;
    await check();
    expect(check()).toBeUndefined();
    clock.advance(IDENTITY_RECHECK_MS);
    await check();
    expect(servers.map((s) => s.infos)).toEqual([2, 2, 2]);
  });

  it("reads a Cluster's masters again in the background: when it names others, and every 10 s", async () => {
    const clock = fakeClock();
    const masters = [info(RUN_A, 3_600), info(RUN_B, 3_600)];
    let generation = 1;
    const cluster: RedisConnection = {
      name: 'cluster',
      get generation() {
        return generation;
      },
      close: async () => {},
      send: async () => masters.join(''),
      shardOf: () => undefined,
    };
    const set: NodeSet = {
      nodes: [new StallGuard(cluster, clock)],
      settings: lockerSettings({ nodes: ['redis://unused:1'], driftFactor: 0 }),
      clock,
    };
    const seen: string[] = [];
    const warnings: string[] = [];
    const identities = new NodeIdentities(1, {
      inspect: (_index, text) => void seen.push(String(text)),
      warn: (index, code) => warnings.push(`${index} ${code}`),
    });
    const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
    await identities.check(set, 10_000);
    expect(seen).toHaveLength(1);

    clock.advance(CLUSTER_RECHECK_MS - 1);
    expect(identities.check(set, 10_000)).toBeUndefined();
    await settled();
    expect(seen).toHaveLength(1); // not due yet

    clock.advance(1);
    masters[1] = info(RUN_C, 1); // a replica took over
    expect(identities.check(set, 10_000)).toBeUndefined(); // no vote waits for it
    expect(identities.known(0, 10_000)).toBe(true);
    await settled();
    expect(seen).toHaveLength(2);
    expect(seen[1]).toContain(RUN_C);

    generation = 2; // the slot table names other masters
    expect(identities.check(set, 10_000)).toBeUndefined();
    await settled();
    expect(seen).toHaveLength(3);
    expect(warnings).toEqual([]); // a Cluster's failover is no change of identity here
  });
});

describe("an operator's read (inspect, list)", () => {
  /** Each node's `GET` reply, or its error's message, counted as `inspect` counts them. */
  async function read(made: ReturnType<typeof over>): Promise<string[]> {
    const { set, identities } = made;
    const counted = countedNodes({ ...set, identities }, 20);
    const replies = await replyOfEveryNode(counted, 20, 'reading', (node, timeoutMs) =>
      node.send('GET', ['k'], timeoutMs),
    );
    return replies.map((r) => ('error' in r ? r.error.message : 'answered'));
  }

  it('counts a node only as it would vote: not one that answered but not INFO', async () => {
    const made = over([RUN_A, RUN_B, RUN_C]);
    await made.check();
    // Node 2 reconnects; the read gets its answer, INFO none within the read's timeout. It
    // may now be another server, so `leader()` would not count it. Before: counted.
    Object.assign(made.servers[2] as ScriptedServer, { generation: 2, infoDelayMs: 200 });
    const views = await read(made);
    expect(views.slice(0, 2)).toEqual(['answered', 'answered']);
    expect(views[2]).toMatch(/^node2 reconnected: it votes again once it has said which server/);
  });

  it("tells a failed read's own cause, not only that the node does not count", async () => {
    const made = over([RUN_A, RUN_B, RUN_C]);
    await made.check();
    const moved = made.servers[1] as ScriptedServer;
    Object.assign(moved, { runId: 'd'.repeat(40), generation: 2 }); // a failover
    expect((await read(made))[1]).toMatch(/^node1 answers as another server/);
    // Then its connection drops: that is why the read got nothing. Before: the abstention.
    moved.down = true;
    expect((await read(made))[1]).toBe('not connected to node1');
  });
});
