-- One-dimensional arrays as values: columns, literals, ARRAY[...], subscripts and slices,
-- = ANY, unnest, array_agg, string_agg, the array functions and operators.
CREATE TABLE arr (id int PRIMARY KEY, tags text[], n int[], ts timestamp[], ok boolean[]);
INSERT INTO arr VALUES (1, '{a,"b c",NULL}', '{1, 2,3}', '{2024-01-01 10:00:00}', '{true,off}');
INSERT INTO arr VALUES (2, '{x}', '{4}', '{}', NULL), (3, NULL, NULL, NULL, '{}');
INSERT INTO arr VALUES (4, ARRAY['p', 'q'], ARRAY[1, NULL], ARRAY['2020-02-29'::timestamp], ARRAY[true]);
SELECT * FROM arr ORDER BY id;
SELECT pg_typeof(tags), pg_typeof(n), pg_typeof(ts), pg_typeof(ok) FROM arr WHERE id = 1;
-- Literals and casts.
SELECT '{1,2}'::int[], '{x}'::text[], '{ " a " , b }'::text[], '[1:2]={7,8}'::int[], '{}'::bigint[];
SELECT '{1,x}'::int[];
SELECT '{1,2'::int[];
SELECT ARRAY[1,2,3], ARRAY['a','b'], ARRAY[1.5, 2], ARRAY[]::int[], ARRAY[NULL]::int[];
SELECT ARRAY[true, false], ARRAY['2024-01-01'::date], ARRAY['a b', '', NULL, 'NULL', 'x"y', 'back\slash'];
-- Equality, = ANY and containment.
SELECT id FROM arr WHERE n = '{1,2,3}';
SELECT id FROM arr WHERE 2 = ANY(n);
SELECT id FROM arr WHERE 'x' = ANY(tags) OR 'p' = ANY(tags) ORDER BY 1;
SELECT id FROM arr WHERE NOT (1 <> ALL(n)) ORDER BY 1;
SELECT id, n @> ARRAY[2], n <@ ARRAY[1,2,3,4], n && ARRAY[3,9] FROM arr ORDER BY id;
SELECT id FROM arr WHERE n @> '{1}' ORDER BY id;
SELECT id FROM arr WHERE tags && ARRAY['x', 'p'] ORDER BY id;
SELECT ARRAY[1,2] = ARRAY[1,2], ARRAY[1,2] < ARRAY[1,3], ARRAY[10] > ARRAY[9], ARRAY[1] < ARRAY[1,0], ARRAY[1,NULL] > ARRAY[1,5];
SELECT ARRAY[1] = ARRAY[1.0];
-- Subscripts and slices.
SELECT id, n[1], n[2], n[5], tags[2] FROM arr ORDER BY id;
SELECT (ARRAY[10,20,30])[2], (ARRAY[10,20,30])[2:], (ARRAY[10,20,30])[:2], (ARRAY[10,20,30])[0], (ARRAY[10,20,30])[3:1];
SELECT n[2:3] FROM arr WHERE id = 1;
SELECT id[1] FROM arr;
-- Functions.
SELECT id, array_length(n, 1), cardinality(n), array_to_string(tags, ',', '*'), array_to_string(tags, '|') FROM arr ORDER BY id;
SELECT array_append(n, 9), array_prepend(0, n), array_cat(n, ARRAY[7,8]), n || 5, n || ARRAY[6], 0 || n FROM arr WHERE id = 1;
SELECT array_position(n, 2), array_position(n, 7), array_positions(ARRAY[1,2,1], 1), array_remove(n, 2), array_replace(n, 2, 20) FROM arr WHERE id = 1;
SELECT array_position(ARRAY[1,NULL,3], NULL), array_remove(ARRAY[1,NULL], NULL);
SELECT string_to_array('a,b,,c', ','), string_to_array('a b', ' ', 'b'), string_to_array('', ','), string_to_array('abc', NULL);
SELECT array_lower(n, 1), array_upper(n, 1), array_ndims(n), array_dims(n), array_length(n, 2) FROM arr WHERE id = 1;
SELECT array_length('{}'::int[], 1), cardinality('{}'::int[]), array_dims('{}'::int[]);
SELECT array_append(NULL::int[], 1), array_cat(NULL::int[], NULL::int[]), ARRAY['a'] || 'b'::text;
-- unnest and ARRAY(subquery).
SELECT id, unnest(n) FROM arr WHERE id < 3 ORDER BY 1, 2;
SELECT x FROM unnest(ARRAY[3,1,2]) AS x ORDER BY x;
SELECT ARRAY(SELECT id FROM arr ORDER BY id DESC);
SELECT id, ARRAY(SELECT x FROM unnest(arr.n) AS x WHERE x > 1 ORDER BY x) FROM arr WHERE id < 3 ORDER BY id;
-- array_agg and string_agg.
SELECT array_agg(id ORDER BY id) FROM arr;
SELECT array_agg(tags[1] ORDER BY id) FROM arr;
SELECT id % 2 AS g, array_agg(id ORDER BY id DESC NULLS FIRST), array_agg(n[1] ORDER BY id) FILTER (WHERE id > 1) FROM arr GROUP BY 1 ORDER BY 1;
SELECT array_agg(DISTINCT x ORDER BY x) FROM (VALUES (3), (1), (3), (NULL)) v(x);
SELECT array_agg(x) FROM (VALUES (1)) v(x) WHERE false;
SELECT string_agg(x, ',' ORDER BY x), string_agg(x, '') FILTER (WHERE x > 'a') FROM (VALUES ('a'), (NULL), ('c')) v(x);
SELECT array_agg(x ORDER BY y), string_agg(y, ', ' ORDER BY x DESC) FROM (VALUES (1, 'b'), (2, 'a')) v(x, y);
SELECT string_agg(x::text, ',') FROM generate_series(1, 5) AS x;
SELECT array_agg(x ORDER BY x) FROM (SELECT unnest(n) x FROM arr) s;
-- Writes.
UPDATE arr SET n = array_append(n, 10) WHERE id = 2 RETURNING n;
UPDATE arr SET tags = tags || 'y'::text WHERE id = 2 RETURNING tags;
DELETE FROM arr WHERE 'q' = ANY(tags) RETURNING id;
SELECT id, n FROM arr ORDER BY id;
-- Sorting and grouping by arrays, as PostgreSQL orders them.
CREATE TABLE arr_order (id int PRIMARY KEY, n int[], t text[]);
INSERT INTO arr_order VALUES (1, '{10}', '{b}'), (2, '{9}', '{a,b}'), (3, '{9,1}', '{a}'), (4, '{NULL}', NULL), (5, '{}', '{}'), (6, NULL, '{B}'), (7, '{-1,5}', '{"a b"}');
SELECT id, n FROM arr_order ORDER BY n, id;
SELECT id, n FROM arr_order ORDER BY n DESC, id;
SELECT id, n FROM arr_order ORDER BY 2 NULLS FIRST, 1;
SELECT id, t FROM arr_order ORDER BY t, id;
SELECT DISTINCT n FROM arr_order ORDER BY n;
SELECT DISTINCT ON (n) n, id FROM arr_order ORDER BY n, id;
SELECT n, count(*) FROM arr_order GROUP BY n ORDER BY n;
SELECT max(id) FROM arr_order GROUP BY n ORDER BY n;
-- Not arrays.
SELECT n[1] FROM (SELECT 1 AS n) s;
DROP TABLE arr;
-- generate_subscripts and regexp_split_to_table, in FROM and in the select list.
CREATE TABLE sr (id int PRIMARY KEY, n int[], s text);
INSERT INTO sr VALUES (1, '{10,20,30}', 'a,b,,c'), (2, '{}', 'x'), (3, NULL, NULL);
SELECT id, generate_subscripts(n, 1) FROM sr ORDER BY 1, 2;
SELECT id, n[i] FROM sr, generate_subscripts(sr.n, 1) AS i ORDER BY 1, 2;
SELECT * FROM generate_subscripts(ARRAY[5,6], 1) WITH ORDINALITY;
SELECT generate_subscripts(ARRAY[5,6], 2);
SELECT id, regexp_split_to_table(s, ',') FROM sr ORDER BY 1, 2;
SELECT x FROM regexp_split_to_table('the quick  brown', '\s+') AS x;
SELECT * FROM regexp_split_to_table('AxBXc', 'x', 'i') WITH ORDINALITY AS t(part, n);
DROP TABLE arr_order, sr;
