export * from './source.js';
export * from './follower.js';
