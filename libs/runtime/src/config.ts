import { z } from 'zod';
import { natsAccessOf, natsAccessProblems, natsConnectOptions, NatsAccessError } from './nats-url.js';

const Bool = z.enum(['true', 'false']).transform((v) => v === 'true');
const Port = z.coerce.number().int().min(0).max(65535);
const PositiveInt = z.coerce.number().int().positive();

/**
 * WEBSUB_TRUSTED_PROXY_HOPS, MCP_TRUSTED_PROXY_HOPS: digits only (no sign, fraction, hex or exponent
 * that Number() would take), since a miscounted hop lets clients choose the address they are rate-limited by.
 */
const ProxyHops = z
  .string()
  .regex(/^[0-9]+$/, 'must be a whole number of proxies in front of the service that append to X-Forwarded-For (0: none; rate limits then use the connecting address)')
  .transform(Number);

const RequestsPerMinute = z.string().regex(/^[0-9]+$/, 'must be a whole number of requests per minute (0: no limit)').transform(Number);

const DelayList = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'must be a comma-separated list of non-negative integers (milliseconds)')
  .transform((v) => v.split(',').map(Number));

/**
 * The whole process configuration, from the environment only (design card §8). Every service reads
 * the same schema so a variable means the same thing everywhere.
 */
export const EnvSchema = z
  .object({
    PORT: Port.default(8080),
    /** Unset: every interface, as a pod needs; 127.0.0.1 keeps a local run to this machine (MCP basic/transports). */
    HOST: z.string().min(1).optional(),
    // Every public URL is BASE_URL followed by a path: a query, a fragment or credentials in it broke them all.
    BASE_URL: z
      .url({ protocol: /^https?$/, error: 'must be an absolute http or https URL' })
      .refine((url) => !/[?#]/.test(url) && !/^https?:\/\/[^/]*@/i.test(url), 'must be an origin with an optional path: no user information, query or fragment')
      // As a URI: the public URLs go into Link headers, whose values are ASCII (RFC 8288 §3.1, RFC 9110 §5.5),
      // and an IDN host went out as raw UTF-8 bytes there. The host in punycode, the path percent-encoded.
      .transform((url) => {
        const { origin, pathname } = new URL(url);
        return origin + pathname;
      })
      .optional(),
    NATS_URL: z.string().min(1).optional(),
    // Files, as the nats CLI names them; read only with NATS_URL set (nats-url.ts).
    NATS_CREDS: z.string().min(1).optional(),
    NATS_NKEY: z.string().min(1).optional(),
    NATS_CERT: z.string().min(1).optional(),
    NATS_KEY: z.string().min(1).optional(),
    NATS_CA: z.string().min(1).optional(),
    NATS_REPLICAS: z.enum(['1', '3', '5']).default('1').transform(Number),
    DATASET_FILE: z.string().min(1).default('data/sample-dataset.json'),
    DATA_DIR: z.string().min(1).default('.data'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    METRICS_PORT: Port.default(9464),
    MCP_SESSION_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    MCP_ALLOWED_ORIGINS: z.string().optional(),
    MCP_RATE_LIMIT_PER_MINUTE: RequestsPerMinute.default(600),
    MCP_TRUSTED_PROXY_HOPS: ProxyHops.default(0),
    WEBSUB_ALLOW_PRIVATE_CALLBACKS: Bool.default(false),
    WEBSUB_LEASE_DEFAULT_SECONDS: PositiveInt.default(864000),
    WEBSUB_LEASE_MIN_SECONDS: PositiveInt.default(3600),
    WEBSUB_LEASE_MAX_SECONDS: PositiveInt.default(864000),
    WEBSUB_RETRY_DELAYS_MS: DelayList.default([0, 60_000, 300_000]),
    WEBSUB_TRUSTED_PROXY_HOPS: ProxyHops.default(0),
    WEBSUB_MAX_SUBSCRIPTIONS: PositiveInt.default(20_000),
    SHUTDOWN_TIMEOUT_MS: PositiveInt.default(10_000),
  })
  .superRefine((env, ctx) => {
    const nats = natsAccessOf(env);
    if (nats !== undefined) {
      try {
        natsConnectOptions(nats);
        for (const problem of natsAccessProblems(nats)) ctx.addIssue({ code: 'custom', path: [problem.variable], message: problem.message });
      } catch (error) {
        if (!(error instanceof NatsAccessError)) throw error;
        ctx.addIssue({ code: 'custom', path: [error.variable], message: error.message });
      }
    }
    // 0 asks for a free port, another one for each.
    if (env.METRICS_PORT === env.PORT && env.PORT !== 0) {
      ctx.addIssue({ code: 'custom', path: ['METRICS_PORT'], message: `must differ from PORT (${env.PORT}): /metrics has a port of its own` });
    }
    if (env.WEBSUB_LEASE_MIN_SECONDS > env.WEBSUB_LEASE_MAX_SECONDS) {
      ctx.addIssue({ code: 'custom', path: ['WEBSUB_LEASE_MIN_SECONDS'], message: 'must not exceed WEBSUB_LEASE_MAX_SECONDS' });
    }
    const lease = env.WEBSUB_LEASE_DEFAULT_SECONDS;
    if (lease < env.WEBSUB_LEASE_MIN_SECONDS || lease > env.WEBSUB_LEASE_MAX_SECONDS) {
      ctx.addIssue({ code: 'custom', path: ['WEBSUB_LEASE_DEFAULT_SECONDS'], message: 'must lie between WEBSUB_LEASE_MIN_SECONDS and WEBSUB_LEASE_MAX_SECONDS' });
    }
  });

export type Env = z.output<typeof EnvSchema>;

export interface Config extends Omit<Env, 'BASE_URL'> {
  /** Public base URL; defaults to http://localhost:PORT for local runs. */
  readonly BASE_URL: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parse the environment; an invalid value throws a ConfigError naming each variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(environment)'}: ${i.message}`));
  }
  const cfg = parsed.data;
  return { ...cfg, BASE_URL: (cfg.BASE_URL ?? `http://localhost:${cfg.PORT}`).replace(/\/+$/, '') };
}

/**
 * A service following NATS is one replica of several, which must publish the same absolute URLs
 * (feeds, Link headers, WebSub topics, MCP resource URIs): the local default names no address a
 * client can reach, and one replica's URLs were unknown to the next (the MCP audit: a resource URI
 * listed by one gateway was "not found" on another). The publisher CLI loads the same schema without it.
 */
export function requireBaseUrlWithNats(env: NodeJS.ProcessEnv = process.env): void {
  if (env.NATS_URL && !env.BASE_URL) {
    throw new ConfigError(['BASE_URL: is required with NATS_URL: every replica must build the same public URLs, and http://localhost:PORT is none a client can reach']);
  }
}

/** Entry points: the configuration, or a message naming each bad variable on stderr and exit code 1. */
export function loadConfigOrExit(service: string, env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    return exitOnConfigError(service, error);
  }
}

/**
 * Entry points: runs a start-up step that checks configuration beyond the schema (MCP_ALLOWED_ORIGINS,
 * MCP_SESSION_SECRET); a ConfigError it raises ends the process like loadConfigOrExit, never as a stack trace.
 */
export async function runOrExitOnConfigError<T>(service: string, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    return exitOnConfigError(service, error);
  }
}

function exitOnConfigError(service: string, error: unknown): never {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${service}: ${error.message}\n`);
  process.exit(1);
}
