export { generateDataset, GenerateOptions, DEFAULT_NOW } from './generate.js';
export { formatJson } from './format-json.js';
export { FUNERAL_HOME } from './funeral-home.js';
export { FUNERAL_TAXONOMY } from './funeral-taxonomy.js';
export { createRandom, type Random } from './random.js';
