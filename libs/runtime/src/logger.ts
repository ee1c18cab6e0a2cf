import { pino, type DestinationStream, type Logger } from 'pino';

export type { DestinationStream, Logger };

/**
 * Structured JSON logs, one object per line, on stdout (or `destination`, for tests that read them);
 * secrets are redacted wherever they appear under these keys.
 */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info', destination?: DestinationStream): Logger {
  const options = {
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['secret', '*.secret', 'hub.secret', '*.hub.secret', 'headers.authorization', 'MCP_SESSION_SECRET'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
