/**
 * A NATS server list as it may be shown: in /readyz (public through the Ingress), logs and the
 * publish CLI's errors (the seed Job's log). A server URL may carry a user and password or a token
 * (`nats://user:secret@host:4222`); each is replaced, the hosts and ports stay.
 */
export function displayedServers(servers: string): string {
  return servers
    .split(',')
    .map((server) => server.trim().replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^@/]*@/i, '$1***@'))
    .join(',');
}
