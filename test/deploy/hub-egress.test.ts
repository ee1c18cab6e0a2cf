// The websub-hub NetworkPolicy closes exactly the address ranges the hub itself refuses at connect
// time (services/websub-hub/src/address-policy.ts: an address is public when ipaddr.js calls its
// range "unicast" and, for IPv6, it lies in global unicast, 2000::/3). Checked against the ipaddr.js
// the hub resolves, so a hub dependency update that adds a range fails here until the chart follows.
import { describe, it, expect, beforeAll } from '@jest/globals';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { IPV6_GLOBAL_UNICAST, isPublicAddress } from '../../services/websub-hub/src/address-policy.js';
import { ensureHelm, renderChart, repoRoot } from './support/chart.js';

interface Address {
  kind(): 'ipv4' | 'ipv6';
  match(range: Cidr): boolean;
  toString(): string;
}
type Cidr = [Address, number];
interface Family {
  prototype: { SpecialRanges: Record<string, Cidr | Cidr[]> };
}
const ipaddr = createRequire(join(repoRoot, 'services/websub-hub/package.json'))('ipaddr.js') as { parseCIDR(cidr: string): Cidr; IPv4: Family; IPv6: Family };

/**
 * Every range ipaddr.js does not call unicast: what the hub refuses. (IPv4-mapped IPv6 addresses the
 * hub judges by their IPv4 address; they leave the pod as IPv4 packets, which the IPv4 block judges.)
 */
function refusedRanges(family: Family): Cidr[] {
  return Object.values(family.prototype.SpecialRanges).flatMap((r) => (Array.isArray(r[0]) ? (r as Cidr[]) : [r as Cidr]));
}

const within = (inner: Cidr, outer: Cidr): boolean => inner[0].kind() === outer[0].kind() && inner[1] >= outer[1] && inner[0].match(outer);
const overlap = (a: Cidr, b: Cidr): boolean => within(a, b) || within(b, a);
const show = ([address, bits]: Cidr): string => `${address.toString()}/${bits}`;

describe('websub-hub egress NetworkPolicy', () => {
  let blocks: { cidr: string; except: string[] }[] = [];
  beforeAll(async () => {
    const objects = await renderChart(await ensureHelm(), ['ci/defaults-values.yaml']);
    const hub = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-websub-hub'));
    blocks = (hub?.spec.egress[0].to as { ipBlock: { cidr: string; except: string[] } }[]).map((peer) => peer.ipBlock);
  }, 120_000);

  it.each([
    ['IPv4', '0.0.0.0/0', ipaddr.IPv4],
    ['IPv6', IPV6_GLOBAL_UNICAST, ipaddr.IPv6],
  ])('%s: excepts every range the hub refuses inside %s, and nothing the hub allows', (_family, cidr, family) => {
    const block = blocks.find((b) => b.cidr === cidr);
    const opened = ipaddr.parseCIDR(cidr);
    const excepted = (block?.except ?? []).map((c) => ipaddr.parseCIDR(c));
    // A range outside the opened block is closed already (and Kubernetes refuses an except outside its cidr).
    const refused = refusedRanges(family).filter((r) => overlap(r, opened));
    expect(excepted.length).toBeGreaterThan(0);
    expect(refused.filter((r) => !excepted.some((e) => within(r, e))).map(show)).toEqual([]);
    expect(excepted.filter((e) => !within(e, opened) || !refused.some((r) => within(e, r))).map(show)).toEqual([]);
    // No entry inside another: the list reads as the set of refused ranges, once each.
    expect(excepted.filter((e, i) => excepted.some((o, j) => i !== j && within(e, o))).map(show)).toEqual([]);
  });

  it('agrees with isPublicAddress on the first address of each excepted range, outside global unicast and on public addresses', () => {
    for (const cidr of blocks.flatMap((b) => b.except)) expect({ cidr, public: isPublicAddress(ipaddr.parseCIDR(cidr)[0].toString()) }).toEqual({ cidr, public: false });
    // IPv4-compatible (::/96, deprecated), unallocated and deprecated site-local IPv6: closed in both.
    for (const address of ['::7f00:1', '::808:808', '4000::1', 'fec0::1']) {
      const parsed = ipaddr.parseCIDR(`${address}/128`);
      const opened = blocks.some((b) => within(parsed, ipaddr.parseCIDR(b.cidr)) && !b.except.some((c) => within(parsed, ipaddr.parseCIDR(c))));
      expect({ address, public: isPublicAddress(address), opened }).toEqual({ address, public: false, opened: false });
    }
    for (const address of ['1.1.1.1', '93.184.216.34', '2606:4700:4700::1111']) {
      expect(isPublicAddress(address)).toBe(true);
      const parsed = ipaddr.parseCIDR(`${address}/${address.includes(':') ? 128 : 32}`);
      expect({ address, excepted: blocks.flatMap((b) => b.except).some((c) => within(parsed, ipaddr.parseCIDR(c))) }).toEqual({ address, excepted: false });
    }
  });
});
