import { describe, expect, it } from 'vitest';
import {
  type ClusterRoutes,
  redirectionOf,
  sendFollowing,
  TRYAGAIN_PAUSE_MS,
} from '../../src/driver/cluster-routing.js';
import { NotSentError } from '../../src/driver/connection.js';

/** Routes whose replies the test scripts, one per send, and which record where each went. */
function scripted(replies: Record<'routed' | 'moved' | 'asked', (string | number | Error)[]>) {
  const sent: string[] = [];
  const sentAt: number[] = [];
  const reply = (route: 'routed' | 'moved' | 'asked', to = '') => {
    sent.push(to ? `${route} ${to}` : route);
    sentAt.push(performance.now());
    const next = replies[route].shift() ?? new Error(`no reply scripted for ${route}`);
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  };
  const routes: ClusterRoutes = {
    routed: () => reply('routed'),
    moved: (address) => reply('moved', address),
    asked: (address) => reply('asked', address),
  };
  return { routes, sent, sentAt };
}

const MOVED = new Error('MOVED 3999 10.0.0.2:6379');
const ASK = new Error('ASK 3999 10.0.0.3:6379');
const TRYAGAIN = new Error('TRYAGAIN Multiple keys request during rehashing of slot');

describe('redirectionOf', () => {
  it('reads where MOVED and ASK send a command, and that TRYAGAIN may be sent again', () => {
    expect(redirectionOf(MOVED)).toEqual({ kind: 'MOVED', slot: 3999, address: '10.0.0.2:6379' });
    expect(redirectionOf(ASK)).toEqual({ kind: 'ASK', slot: 3999, address: '10.0.0.3:6379' });
    expect(redirectionOf(TRYAGAIN)).toEqual({ kind: 'TRYAGAIN' });
    expect(redirectionOf(new Error('CLUSTERDOWN The cluster is down'))).toBeUndefined();
    expect(redirectionOf(new Error('MOVED (the slot moved...)'))).toBeUndefined();
    expect(redirectionOf('MOVED 3999 10.0.0.2:6379')).toBeUndefined(); // not an Error
  });
});

describe('sendFollowing', () => {
  it('follows one MOVED to the master it names, and reports a second one', async () => {
    const moved = scripted({ routed: [MOVED], moved: ['OK'], asked: [] });
    expect(await sendFollowing(moved.routes, 100)).toBe('OK');
    expect(moved.sent).toEqual(['routed', 'moved 10.0.0.2:6379']);

    const twice = scripted({ routed: [MOVED], moved: [MOVED], asked: [] });
    await expect(sendFollowing(twice.routes, 100)).rejects.toBe(MOVED);
    expect(twice.sent).toEqual(['routed', 'moved 10.0.0.2:6379']);
  });

  it('follows ASK to the importing master, and reports a redirection there', async () => {
    const asked = scripted({ routed: [ASK], moved: [], asked: [1] });
    expect(await sendFollowing(asked.routes, 100)).toBe(1);
    expect(asked.sent).toEqual(['routed', 'asked 10.0.0.3:6379']);

    const movedThere = scripted({ routed: [ASK], moved: [], asked: [MOVED] });
    await expect(sendFollowing(movedThere.routes, 100)).rejects.toBe(MOVED);
    expect(movedThere.sent).toEqual(['routed', 'asked 10.0.0.3:6379']);
  });

  it('reports a redirection the client follows by itself (no route for it)', async () => {
    const { routes, sent } = scripted({ routed: [MOVED, ASK], moved: [], asked: [] });
    await expect(sendFollowing({ routed: routes.routed }, 100)).rejects.toBe(MOVED);
    await expect(sendFollowing({ routed: routes.routed }, 100)).rejects.toBe(ASK);
    expect(sent).toEqual(['routed', 'routed']);
  });

  it('sends again after TRYAGAIN, from the master of the slot, after a pause', async () => {
    const { routes, sent, sentAt } = scripted({
      routed: [TRYAGAIN, ASK, ASK],
      moved: [],
      asked: [TRYAGAIN, 'OK'],
    });
    expect(await sendFollowing(routes, 1_000)).toBe('OK');
    expect(sent).toEqual([
      'routed',
      'routed',
      'asked 10.0.0.3:6379',
      'routed',
      'asked 10.0.0.3:6379',
    ]);
    const [first = 0, second = 0] = sentAt;
    expect(second - first).toBeGreaterThanOrEqual(TRYAGAIN_PAUSE_MS - 1); // timers may fire early
  });

  it('sends nothing once the timeout has passed, and reports the last TRYAGAIN', async () => {
    const timeoutMs = 5 * TRYAGAIN_PAUSE_MS;
    const { routes, sentAt } = scripted({
      routed: Array(100).fill(TRYAGAIN),
      moved: [],
      asked: [],
    });
    const started = performance.now();
    await expect(sendFollowing(routes, timeoutMs)).rejects.toBe(TRYAGAIN);
    expect(sentAt.length).toBeGreaterThan(1);
    expect(Math.max(...sentAt) - started).toBeLessThan(timeoutMs);
  });

  it('never sends again after a failure that may have run the command', async () => {
    const lost = new Error('Connection is closed.');
    const { routes, sent } = scripted({ routed: [lost], moved: [], asked: [] });
    await expect(sendFollowing(routes, 1_000)).rejects.toBe(lost);
    expect(sent).toEqual(['routed']);
    const afterMoved = scripted({ routed: [MOVED], moved: [lost], asked: [] });
    await expect(sendFollowing(afterMoved.routes, 1_000)).rejects.toThrow(
      'slot 3999 moved to 10.0.0.2:6379 (MOVED), which did not answer: Connection is closed.',
    );
    expect(afterMoved.sent).toEqual(['routed', 'moved 10.0.0.2:6379']);
  });

  it('says that the master a redirection named did not answer, keeping what was not sent', async () => {
    const down = new NotSentError('not connected to 10.0.0.2:6379: connect ECONNREFUSED');
    const moved = scripted({ routed: [MOVED], moved: [down], asked: [] });
    const error = await sendFollowing(moved.routes, 1_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotSentError); // nothing to undo there
    expect((error as Error).message).toBe(
      'slot 3999 moved to 10.0.0.2:6379 (MOVED), which did not answer: not connected to 10.0.0.2:6379: connect ECONNREFUSED',
    );
    const asked = scripted({ routed: [ASK], moved: [], asked: [down] });
    await expect(sendFollowing(asked.routes, 1_000)).rejects.toThrow(
      /^slot 3999 is migrating to 10\.0\.0\.3:6379 \(ASK\), which did not answer: not connected/,
    );
    // The named master's own reply (NOSCRIPT: send EVAL) is reported as it is.
    const noscript = new Error('NOSCRIPT No matching script. Please use EVAL.');
    const replied = scripted({ routed: [MOVED], moved: [noscript], asked: [] });
    await expect(sendFollowing(replied.routes, 1_000)).rejects.toBe(noscript);
  });
});
