import { pino, type DestinationStream, type Logger } from 'pino';

export type { DestinationStream, Logger };

/**
 * pino's `isoTime`, worked out once per millisecond instead of once per line: with request lines at
 * info, `toISOString` on every line was 4.4 % of the hottest endpoint's CPU (CPU profile under wrk,
 * ADR 0009 ninth-session addendum), and a loaded pod writes many lines per millisecond. Same format.
 */
function isoTimeOncePerMillisecond(): () => string {
  let millis = Number.NaN;
  let field = '';
  return () => {
    const now = Date.now();
    if (now !== millis) {
      millis = now;
      field = `,"time":"${new Date(now).toISOString()}"`;
    }
    return field;
  };
}

/**
 * Structured JSON logs, one object per line, on stdout (or `destination`, for tests that read them);
 * secrets are redacted wherever they appear under these keys.
 */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info', destination?: DestinationStream): Logger {
  const options = {
    name: service,
    level,
    base: { service },
    timestamp: isoTimeOncePerMillisecond(),
    redact: { paths: ['secret', '*.secret', 'hub.secret', '*.hub.secret', 'headers.authorization', 'MCP_SESSION_SECRET'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
