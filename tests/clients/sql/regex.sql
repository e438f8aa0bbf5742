-- Regular expressions: ~ ~* !~ !~*, regexp_replace, regexp_match, regexp_split_to_array,
-- regexp_like, regexp_count, with PostgreSQL's flags; errors as PostgreSQL gives them.
CREATE TABLE rx (id int PRIMARY KEY, s text);
INSERT INTO rx VALUES (1, 'foobar'), (2, 'FooBaz'), (3, 'a1b22c333'), (4, NULL), (5, 'line1
line2');
SELECT id FROM rx WHERE s ~ '^foo' ORDER BY id;
SELECT id FROM rx WHERE s ~* '^foo' ORDER BY id;
SELECT id FROM rx WHERE s !~ 'o' ORDER BY id;
SELECT id FROM rx WHERE s !~* 'BA[RZ]' ORDER BY id;
SELECT id, regexp_replace(s, '\d+', '#') , regexp_replace(s, '\d+', '#', 'g'), regexp_replace(s, '(o+)', '<\1>') FROM rx ORDER BY id;
SELECT regexp_replace('Hello World', 'o', '0', 'gi'), regexp_replace('abc', 'B', 'x', 'i'), regexp_replace('a.b', '.', '-', 'gq');
SELECT regexp_match('foobarbequebaz', '(bar)(beque)'), regexp_match('foobar', 'x'), regexp_match('abc', 'B', 'i'), regexp_match('abc', 'b');
SELECT (regexp_match(s, '(\d+)'))[1] FROM rx WHERE id = 3;
SELECT regexp_split_to_array('hello world  x', '\s+'), regexp_split_to_array('abc', ''), regexp_split_to_array('a,b,,c', ',');
SELECT regexp_like('Hello', 'h', 'i'), regexp_like('Hello', 'h'), regexp_count('ABCABC', 'b', 1, 'i'), regexp_count('aaa', 'a'), regexp_count('abcabc', 'c', 4);
SELECT id FROM rx WHERE s ~ 'line1.line2';
SELECT id FROM rx WHERE regexp_like(s, '^line2$', 'n');
SELECT 'abc' ~ '(';
SELECT regexp_replace('a', 'a', 'b', 'z');
SELECT 1 ~ '1';
SELECT regexp_match('abc', 'b', 'g');
SELECT count(*) FILTER (WHERE s ~ '[0-9]') FROM rx;
DROP TABLE rx;
-- regexp_matches: a row per match (with g), its captures as text[].
select regexp_matches('foobarbequebaz', '(bar)(beque)');
select regexp_matches('foobarbequebazilbarfbonk', '(b[^b]+)(b[^b]+)', 'g');
select regexp_matches('abc', '', 'g');
select * from regexp_matches('a1b22c333', '\d+', 'g') with ordinality;
select regexp_matches('abc', 'x');
select (regexp_matches('k=v, a=b', '(\w)=(\w)', 'g'))[2];
select x, m from (values ('a1'), ('b2c3')) t(x), regexp_matches(x, '[a-z](\d)', 'g') m;
select regexp_matches('a', 'a', 'z');
select regexp_matches(1, 'a');
select 1 where regexp_matches('a','a') is not null;
select pg_typeof(regexp_matches('a', 'a'));
select regexp_matches('aXbX', 'x', 'gi'), 1 as k;
select regexp_matches('ab', '(a)(x)?');
select regexp_matches(NULL, 'a');
