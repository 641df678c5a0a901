import { describe, expect, it } from 'vitest';
import { withoutTokens } from '../../src/caught-errors.js';
import { NotSentError } from '../../src/driver/connection.js';
import { newToken } from '../../src/engine/token.js';

const TOKEN = 'jCDP72sW3S2RoEJO8PGLFg'; // 22 base64url characters, as distlock draws them

describe('withoutTokens', () => {
  it('masks a token that a server reply echoes, keeping the class and dropping the command', () => {
    class ReplyError extends Error {}
    const reply = Object.assign(
      new ReplyError(`ERR unknown command 'EVALSHA', with args beginning with: '${TOKEN}'`),
      { command: { name: 'evalsha', args: ['distlock:{r}', TOKEN] } },
    );
    const masked = withoutTokens(reply);
    expect(masked).toBeInstanceOf(ReplyError);
    expect(masked.message).toBe(
      "ERR unknown command 'EVALSHA', with args beginning with: '<token>'",
    );
    expect(String(masked.stack)).not.toContain(TOKEN);
    expect('command' in masked).toBe(false);
  });

  it("leaves distlock's own errors as they are, host names that look like tokens and all", () => {
    // "redis-lock-primary-eu1" is 22 characters of [\w-]: before, the error became a plain
    // Error, and its cause (the real reason it was not sent) was lost.
    const cause = new Error('Hostname/IP does not match certificate');
    const notSent = new NotSentError('not connected to redis-lock-primary-eu1.corp:6379', {
      cause,
    });
    expect(withoutTokens(notSent)).toBe(notSent);
  });
});

describe('newToken', () => {
  it('draws 22 base64url characters, never the same token twice', () => {
    const tokens = Array.from({ length: 10_000 }, () => newToken());
    for (const token of tokens) expect(token).toMatch(/^[\w-]{22}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
