import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; secrets are redacted wherever they appear under these keys. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['secret', '*.secret', 'hub.secret', '*.hub.secret', 'headers.authorization', 'MCP_SESSION_SECRET'], censor: '[redacted]' },
  });
}
