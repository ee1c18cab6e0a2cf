export * from './primitives.js';
export * from './business.js';
export * from './review.js';
export * from './input.js';
export * from './documents.js';
export * from './search.js';
