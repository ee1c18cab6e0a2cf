import { describe, expect, it } from '@jest/globals';
import { callerDirectory } from '../src/index.js';

describe('callerDirectory', () => {
  it('is where npm was run for an npm script, the working directory otherwise', () => {
    expect(callerDirectory({ npm_lifecycle_event: 'dataset:publish', INIT_CWD: '/home/publisher/data' })).toBe('/home/publisher/data');
    // An INIT_CWD inherited from an npm script that ran something else, which ran this.
    expect(callerDirectory({ INIT_CWD: '/elsewhere' })).toBe(process.cwd());
    expect(callerDirectory({ npm_lifecycle_event: 'dataset:publish' })).toBe(process.cwd());
  });
});
