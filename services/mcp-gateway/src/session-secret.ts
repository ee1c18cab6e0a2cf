import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type Config } from '@reviews/runtime';

export const SESSION_SECRET_FILE = 'mcp-session-secret';

/**
 * The key that signs MCP session ids. Replicas (NATS_URL set) must share MCP_SESSION_SECRET, or a
 * session started on one pod would be a 404 on the next. A standalone process without it keeps a
 * generated secret under DATA_DIR, so a restart does not invalidate the sessions of connected clients.
 */
export function resolveSessionSecret(config: Pick<Config, 'MCP_SESSION_SECRET' | 'NATS_URL' | 'DATA_DIR'>): string {
  if (config.MCP_SESSION_SECRET !== undefined) return config.MCP_SESSION_SECRET;
  if (config.NATS_URL !== undefined) {
    throw new ConfigError(['MCP_SESSION_SECRET: required when NATS_URL is set (every mcp-gateway replica must sign session ids with the same secret)']);
  }
  const file = join(config.DATA_DIR, SESSION_SECRET_FILE);
  let secret: string;
  try {
    mkdirSync(config.DATA_DIR, { recursive: true });
    try {
      // 'wx' fails when the file exists, so two processes starting together end up with one secret.
      writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    secret = readFileSync(file, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError([`DATA_DIR: cannot keep the MCP session secret in ${file} (${code}); give a directory this process can write, or set MCP_SESSION_SECRET`]);
  }
  if (secret.length < 32) throw new ConfigError([`MCP_SESSION_SECRET: ${file} holds fewer than 32 characters; delete it to generate a new secret`]);
  return secret;
}
