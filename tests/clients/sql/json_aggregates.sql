-- json_agg, jsonb_agg, json_object_agg, jsonb_object_agg (with their own ORDER BY and
-- DISTINCT), to_json of arrays, bool_and / bool_or / every, as aggregates and over windows;
-- whole rows made JSON (row_to_json(t), to_json(t), to_jsonb(t), json_agg(t), jsonb_agg(t)).
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
SELECT row_to_json(ja), to_json(j), to_jsonb(ja) FROM ja, ja AS j WHERE j.id = ja.id ORDER BY ja.id;
SELECT json_agg(ja ORDER BY id) FROM ja;
SELECT jsonb_agg(s ORDER BY s.id) FROM (SELECT id, name AS "Name" FROM ja) AS s;
SELECT ok, json_agg(ja.* ORDER BY id) FROM ja GROUP BY ok ORDER BY ok;
SELECT row_to_json(r) FROM (SELECT id, upper(name) AS up FROM ja WHERE id < 3) r ORDER BY id;
WITH w AS (SELECT 1 AS one, 'x' AS two) SELECT row_to_json(w), to_jsonb(w) FROM w;
SELECT json_agg(w) FROM (VALUES (1, 'a'), (2, NULL)) AS w (n, s);
DROP TABLE ja;
