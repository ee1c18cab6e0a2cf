import { describe, expect, it } from '@jest/globals';
import { ConfigError, displayedServers, loadConfig, natsConnectOptions } from '../src/index.js';

describe('NATS_URL as connection options', () => {
  it.each([
    ['nats://a:4222', { servers: ['nats://a:4222'] }],
    ['nats://a:4222, nats://b:4222', { servers: ['nats://a:4222', 'nats://b:4222'] }],
    ['nats://reader:s3cret@a:4222,nats://b:4222', { servers: ['nats://a:4222', 'nats://b:4222'], user: 'reader', pass: 's3cret' }],
    ['tls://reader:p%40ss%3Aword@a:4222,tls://reader:p%40ss%3Aword@b:4222', { servers: ['tls://a:4222', 'tls://b:4222'], user: 'reader', pass: 'p@ss:word', tls: {} }],
    ['TLS://a:4222, tls://b', { servers: ['TLS://a:4222', 'tls://b'], tls: {} }],
    ['nats://t0ken@a:4222', { servers: ['nats://a:4222'], token: 't0ken' }],
    ['reader:pw@a:4222', { servers: ['a:4222'], user: 'reader', pass: 'pw' }],
  ])('%s connects to the servers with the credentials apart', (url, options) => {
    expect(natsConnectOptions(url)).toEqual(options);
  });

  it.each([
    ['nats://a:pw@x:4222,nats://b:pw@y:4222', 'the server URLs carry different credentials; one connection has one identity'],
    ['nats://a:%E0%A4%A@x:4222', 'the credentials in a server URL are not valid percent-encoding'],
    ['tls://a:4222,nats://b:4222', 'the server URLs mix tls:// with other schemes; one connection either requires TLS or does not'],
    ['tls://a:4222,b:4222', 'the server URLs mix tls:// with other schemes; one connection either requires TLS or does not'],
    ['http://x y', '"http://x y" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['nats://a:4222,nats://', '"nats://" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['nats://reader:s3cret@a:99999', '"nats://a:99999" is not a server URL (nats://host:port, tls://host:port or host:port)'],
  ])('%s is refused at start, naming NATS_URL (never its credentials)', (url, message) => {
    expect(() => loadConfig({ NATS_URL: url })).toThrow(new ConfigError([`NATS_URL: ${message}`]));
  });

  it.each([
    ['nats://user:pw@a:4222,nats://b:4222', 'nats://***@a:4222,nats://b:4222'],
    ['tls://token@a:4222', 'tls://***@a:4222'],
    ['user:pw@a:4222', '***@a:4222'],
    ['a:4222, b', 'a:4222,b'],
  ])('displayedServers(%s) is %s', (servers, shown) => {
    expect(displayedServers(servers)).toBe(shown);
  });
});
