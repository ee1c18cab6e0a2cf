// Tests run against the TypeScript sources (transpiled by swc), so `npm test` never depends on a stale dist/.
import { readdirSync, existsSync } from 'node:fs';

const workspaces = ['libs', 'services'].flatMap((group) =>
  readdirSync(new URL(`./${group}/`, import.meta.url)).filter((name) => existsSync(new URL(`./${group}/${name}/package.json`, import.meta.url))).map((name) => ({ name, dir: `${group}/${name}` })),
);

const moduleNameMapper = { '^(\\.{1,2}/.*)\\.js$': '$1' };
for (const { name, dir } of workspaces) {
  moduleNameMapper[`^@reviews/${name}$`] = `<rootDir>/${dir}/src/index.ts`;
  moduleNameMapper[`^@reviews/${name}/(.*)$`] = `<rootDir>/${dir}/src/$1.ts`;
}

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2023' }, module: { type: 'es6' }, sourceMaps: 'inline' }],
  },
  moduleNameMapper,
  testMatch: ['<rootDir>/{libs,services}/*/test/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  maxWorkers: 2,
  testTimeout: 30000,
};
