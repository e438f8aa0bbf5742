-- json_agg, jsonb_agg, json_object_agg, jsonb_object_agg (with their own ORDER BY and
-- DISTINCT), to_json of arrays, bool_and / bool_or / every, as aggregates and over windows.
CREATE TABLE ja (id int PRIMARY KEY, name text, score numeric, ok boolean, doc jsonb, tags text[]);
INSERT INTO ja VALUES (1, 'a', 1.50, true, '{"x": 1}', '{p,q}'), (2, 'b', NULL, false, NULL, '{}'), (3, 'c"q', 3, true, '[1, 2]', NULL);
SELECT json_agg(id ORDER BY id), jsonb_agg(name ORDER BY id), json_agg(score ORDER BY id), jsonb_agg(doc ORDER BY id) FROM ja;
SELECT json_agg(tags ORDER BY id), to_json(ARRAY[1,2]), to_jsonb(ARRAY['a', NULL]), json_build_object('t', ARRAY[true]) FROM ja;
SELECT json_object_agg(name, score ORDER BY id), jsonb_object_agg(name, doc) FROM ja;
SELECT json_object_agg(id, ok ORDER BY id DESC) FROM ja;
SELECT json_agg(x) FROM (VALUES (1)) v(x) WHERE false;
SELECT json_object_agg(n, 1) FROM (VALUES (NULL::text)) v(n);
SELECT bool_and(ok), bool_or(ok), every(ok), bool_and(ok) FILTER (WHERE id <> 2) FROM ja;
SELECT id % 2 AS g, bool_or(score > 2), jsonb_agg(id ORDER BY id) FROM ja GROUP BY 1 ORDER BY 1;
SELECT id, bool_or(ok) OVER (ORDER BY id) FROM ja ORDER BY id;
SELECT bool_and(id) FROM ja;
SELECT bool_and(NULL::boolean), bool_or(x) FROM (VALUES (NULL::boolean)) v(x);
SELECT json_agg(DISTINCT ok) FROM ja;
DROP TABLE ja;
