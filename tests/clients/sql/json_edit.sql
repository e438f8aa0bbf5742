-- json_build_array, jsonb_set, jsonb || and -, and the json functions that give rows
-- (jsonb_array_elements[_text], json_array_elements[_text], jsonb_object_keys, jsonb_each[_text]).
SELECT json_build_array(1, 'a', NULL, true, 2.5), jsonb_build_array(1, 'a', NULL, ARRAY[1,2], '{"k":1}'::jsonb), json_build_array();
SELECT jsonb_set('{"a":{"b":1}}', '{a,b}', '2'), jsonb_set('[1,2]', '{5}', '3'), jsonb_set('[1,2]', '{-5}', '0'), jsonb_set('{"a":1}', '{b}', '2', false), jsonb_set('{"a":1}', '{b}', '"x"');
SELECT '{"a":1,"b":2}'::jsonb || '{"b":3}', '[1]'::jsonb || '2'::jsonb, '[1]'::jsonb || '[2,3]'::jsonb, '{"a":1}'::jsonb || '[2]'::jsonb;
SELECT '{"a":1,"b":2}'::jsonb - 'a', '["a","b",1]'::jsonb - 'a', '[1,2,3]'::jsonb - -1, '{"a":1,"b":2,"c":3}'::jsonb - '{a,c}'::text[];
SELECT * FROM jsonb_array_elements('[1, "x", {"a": [1,2]}, null]');
SELECT * FROM jsonb_array_elements_text('[1, "x", {"a":1}, null]');
SELECT * FROM json_array_elements('[1,  "x" , {"b":1,"a":2}]');
SELECT value FROM json_array_elements_text('["a", 2]') WITH ORDINALITY;
SELECT * FROM jsonb_object_keys('{"bb":1,"a":2,"ccc":3}');
SELECT * FROM jsonb_each('{"b":[1],"a":"x","c":null}');
SELECT key, value FROM jsonb_each_text('{"b":[1],"a":"x","c":null}') ORDER BY key;
CREATE TABLE jd (id int PRIMARY KEY, doc jsonb);
INSERT INTO jd VALUES (1, '{"tags":["a","b"],"n":1}'), (2, '{"tags":[],"n":2}'), (3, NULL);
SELECT id, jsonb_array_elements_text(doc->'tags') FROM jd ORDER BY 1, 2;
SELECT id, t FROM jd, jsonb_array_elements_text(jd.doc->'tags') AS t ORDER BY 1, 2;
SELECT id, k FROM jd, jsonb_object_keys(jd.doc) AS k ORDER BY 1, 2;
UPDATE jd SET doc = jsonb_set(doc, '{n}', to_jsonb((doc->>'n')::int + 10)) WHERE id = 1 RETURNING doc;
UPDATE jd SET doc = doc || '{"new": true}' WHERE id = 2 RETURNING doc;
UPDATE jd SET doc = doc - 'tags' WHERE id = 2 RETURNING doc;
SELECT * FROM jsonb_array_elements('{"a":1}');
SELECT * FROM jsonb_array_elements('1');
SELECT * FROM jsonb_object_keys('[1]');
SELECT jsonb_set('1', '{a}', '2');
SELECT '{"a":1}'::jsonb - 1;
SELECT jsonb_set('[1]', '{x}', '2');
DROP TABLE jd;
