-- Network addresses: inet and cidr in and out, their order, containment operators,
-- functions, casts, an index on them, and bad input.
CREATE TABLE hosts (id int PRIMARY KEY, addr inet, net cidr);
INSERT INTO hosts VALUES
  (1, '192.168.1.5', '192.168.1.0/24'),
  (2, '192.168.1.5/24', '10.0.0.0/8'),
  (3, '10.1.2.3/8', '10.1.0.0/16'),
  (4, '::1', '2001:db8::/32'),
  (5, '2001:DB8::42/64', '::/0'),
  (6, '9.255.255.255', '192.168.0.0/16'),
  (7, NULL, NULL);
SELECT id, addr, net FROM hosts ORDER BY id;
SELECT id, addr FROM hosts ORDER BY addr, id;
SELECT id, net FROM hosts ORDER BY net DESC, id;
SELECT id FROM hosts WHERE addr = '192.168.1.5' ORDER BY id;
SELECT id FROM hosts WHERE addr << '192.168.0.0/16' ORDER BY id;
SELECT id FROM hosts WHERE addr <<= '192.168.1.0/24' ORDER BY id;
SELECT id FROM hosts WHERE net >> '10.1.2.3' ORDER BY id;
SELECT id FROM hosts WHERE net >>= '10.0.0.0/8' ORDER BY id;
SELECT id FROM hosts WHERE addr && '10.0.0.0/8' ORDER BY id;
SELECT id, host(addr), masklen(addr), family(addr), abbrev(addr) FROM hosts ORDER BY id;
SELECT id, network(addr), broadcast(addr), netmask(addr), hostmask(addr) FROM hosts WHERE id <= 3 ORDER BY id;
SELECT set_masklen('192.168.1.5/24'::inet, 16), set_masklen('192.168.1.0/24'::cidr, 16);
SELECT addr::text, net::text, addr::cidr FROM hosts WHERE id IN (1, 2, 3) ORDER BY id;
SELECT '10.1.2.3'::cidr, '10'::cidr, '128.1'::cidr, '192.168.1'::cidr, '10/8'::cidr;
SELECT '::ffff:1.2.3.4'::inet, 'fe80::1/64'::inet, '0.0.0.0/0'::cidr;
SELECT count(DISTINCT addr), min(addr), max(addr) FROM hosts;
SELECT pg_typeof(addr), pg_typeof(net), pg_typeof(network(addr)) FROM hosts WHERE id = 1;
-- An index answers by the type's order.
CREATE INDEX hosts_addr ON hosts (addr);
SELECT id FROM hosts WHERE addr = '2001:db8::42/64';
SELECT id FROM hosts WHERE addr > '10.0.0.0' AND addr < '192.168.255.255' ORDER BY addr;
UPDATE hosts SET addr = '172.16.0.1' WHERE id = 6 RETURNING addr;
-- Bad input.
SELECT '192.168.1.5/24'::cidr;
SELECT '1.2.3.256'::inet;
SELECT '1.2.3.4/33'::inet;
SELECT 'nope'::inet;
SELECT set_masklen('1.2.3.4'::inet, 33);
SELECT host(42);
DROP TABLE hosts;
