import { describe, expect, it } from '@jest/globals';
import { callerDirectory } from '../src/index.js';

describe('callerDirectory', () => {
  it('is where npm was run for the npm script itself, the working directory otherwise', () => {
    expect(callerDirectory({ npm_lifecycle_event: 'dataset:publish', INIT_CWD: '/home/publisher/data' }, 'dataset:publish')).toBe('/home/publisher/data');
    // Run from inside another npm script (`cd sub && node …/publish-cli.js mine.json`), which it inherits both from.
    expect(callerDirectory({ npm_lifecycle_event: 'release', INIT_CWD: '/home/publisher' }, 'dataset:publish')).toBe(process.cwd());
    expect(callerDirectory({ npm_lifecycle_event: 'dataset:publish' }, 'dataset:publish')).toBe(process.cwd());
  });
});
