export * from './config.js';
export * from './logger.js';
export * from './metrics.js';
